package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/view"
)

func newView() *cobra.Command {
	var (
		ff     filterFlags
		listen string
		open   bool
	)
	c := &cobra.Command{
		Use:   "view [FILE...] [--listen 127.0.0.1:0] [--open]",
		Short: "Explore recordings in the browser: pprof's views and a time view",
		Long: `View serves recordings (default culprit.rec) as a local web page and prints
its URL: pprof's web UI (flame graph, call graph, top, peek, source,
disassembly) on culprit's symbolized samples, and a time view of the samples
of each thread, where selecting a time range opens pprof's views on it.
It runs until interrupted (Ctrl-C).

The server listens on the loopback interface; the URL carries a random token
and requests without it are refused. The filter flags select the samples
every view shows.`,
		Example: `  culprit view
  culprit view --open --comm myprog culprit.rec
  culprit view --listen 0.0.0.0:8080 culprit.rec     reachable from other hosts`,
		RunE: func(c *cobra.Command, args []string) error {
			host, _, err := net.SplitHostPort(listen)
			if err != nil {
				return usagef("--listen %q: want HOST:PORT, e.g. 127.0.0.1:0 (port 0 picks a free one)", listen)
			}
			p, err := ff.load(args, c.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			if len(p.Samples) == 0 {
				return fmt.Errorf("no samples to show")
			}
			srv, err := view.New(p, c.ErrOrStderr())
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			defer ln.Close()
			if !loopback(host) {
				fmt.Fprintf(c.ErrOrStderr(), "culprit view: warning: listening on %s, not only on this machine: whoever has the URL can read the profiles\n", ln.Addr())
			}
			// Interrupts stop the server from the moment its URL is known.
			ctx, stop := signal.NotifyContext(c.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			url := "http://" + ln.Addr().String() + srv.Path()
			fmt.Fprintln(c.OutOrStdout(), url)
			if open {
				if err := exec.Command("xdg-open", url).Start(); err != nil {
					fmt.Fprintf(c.ErrOrStderr(), "culprit view: could not open a browser (%v): open the URL above\n", err)
				}
			}
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_ = hs.Shutdown(sctx)
			}()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:0", "address to serve on (HOST:PORT; port 0 picks a free one); other than loopback only if you mean it")
	f.BoolVar(&open, "open", false, "open the page in the default browser (xdg-open)")
	ff.register(f)
	f.SortFlags = false
	return c
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
