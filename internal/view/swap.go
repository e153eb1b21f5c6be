package view

import (
	"encoding/json"
	"html/template"
	"strings"
)

// Loading one of pprof's pages costs the browser more than the server:
// a new document, pprof's styles and scripts parsed and compiled again,
// its data parsed. So a link from one of pprof's pages to another view
// or query of the same UI (the same range: pprof's View, Sample, Refine
// and Config menus, the flame graph's action menu, the title link) is
// answered in place (swapScript): the page fetches the other page's
// HTML, puts its head and body in place of its own in the same document,
// and runs its scripts, after removing the listeners the old page's
// scripts added to the window and the document (those on its elements go
// with them). The URL follows (history.pushState), and back and forward
// show the URL shown the same way. pprof's scripts run as they would on
// the page loaded: they read the same elements and the same URL. culprit's
// own pages carry the script too, and put one of pprof's pages in place
// when a link leads there (the index's views, the links atop each page).
// From any page, the index and culprit's pages marked InPlace (the time
// view) are put in place the same way. A link that leaves the UI (another
// range, culprit's other pages, the download), an error answer, or an
// answer that is not one of the pages culprit serves loads the page
// instead. A flame graph page draws another query of itself in
// place by its own script (flameScript), which swapScript leaves it to.

// swapViews are the last path elements of pprof's pages that swapScript
// puts in place: the views of pprofViews, and the UI's root (its call
// graph).
func swapViews() []string {
	out := []string{""}
	for _, v := range pprofViews {
		out = append(out, v.Path)
	}
	return out
}

// swapOwnViews are the paths, below the server's root, of culprit's own
// pages that swapScript puts in place: the index, and the pages marked
// InPlace (their scripts run again in a document another page was put in
// place of).
func swapOwnViews() []string {
	out := []string{""}
	for _, pg := range Pages {
		if pg.InPlace {
			out = append(out, pg.Path)
		}
	}
	return out
}

// swapScriptHTML is the script element serveUI puts in every HTML page
// of pprof's UI, after culprit's links; swapOwnHTML, the same script for
// culprit's own pages (the index, the time view, the analyses' pages),
// before their own scripts. Set by init: the pages' list, which it reads,
// leads back to them.
var (
	swapScriptHTML string
	swapOwnHTML    template.HTML
)

func init() {
	views, _ := json.Marshal(swapViews()) // strings: it cannot fail
	own, _ := json.Marshal(swapOwnViews())
	swapScriptHTML = strings.NewReplacer("VIEWS", string(views), "OWNVIEWS", string(own)).Replace(swapScript)
	swapOwnHTML = template.HTML(strings.Replace(swapScriptHTML, "<script data-culprit-swap>", "<script data-culprit-swap data-own>", 1))
}

// swapScript is marked data-culprit-swap: a page put in place carries it
// too, and it is not run again (the first one's listeners stay).
const swapScript = `<script data-culprit-swap>
"use strict";
(function () {
  // In a frame (the time view's flame graph), the page's own script
  // draws what it can in place and sends other links to the top.
  if (window.culpritSwap || window.parent !== window) return;
  const views = VIEWS, ownViews = OWNVIEWS;
  // On one of culprit's own pages (data-own), links to any of pprof's
  // pages are put in place; on pprof's, those of the same UI; on both,
  // links to culprit's pages that can be put in place (ownViews).
  let ownPage = !!(document.currentScript && document.currentScript.hasAttribute("data-own"));
  const push = history.pushState.bind(history);
  history.culpritPush = push; // the page's own scripts may wrap pushState
  const noHash = h => { const u = new URL(h, location.href); u.hash = ""; return u.href; };
  const dir = p => p.replace(/[^/]*$/, "");
  let shown = noHash(location.href), wanted = "";
  // The listeners the page's scripts add to the window and the document,
  // removed when another page is put in place.
  let added = [];
  const own = {};
  for (const [name, target] of [["window", window], ["document", document]]) {
    const add = target.addEventListener.bind(target), remove = target.removeEventListener.bind(target);
    own[name] = add;
    target.addEventListener = function (type, fn, opts) {
      added.push([remove, type, fn, opts]);
      add(type, fn, opts);
    };
  }
  // root is the server's root, of the page at path p: culprit's pages
  // are at the root, pprof's two levels below it (pprof/RANGE/VIEW).
  const root = p => ownPage ? dir(p) : p.replace(/[^/]*\/[^/]*\/[^/]*$/, "");
  // inUI reports whether u is a page swapScript puts in place of this one.
  function inUI(u) {
    if (u.origin !== location.origin) return false;
    const r = root(location.pathname);
    if (u.pathname.startsWith(r) && ownViews.includes(u.pathname.slice(r.length))) return true;
    if (ownPage) {
      const m = u.pathname.match(/\/pprof\/[^/]+\/([^/]*)$/);
      return !!m && views.includes(m[1]);
    }
    if (dir(u.pathname) !== dir(location.pathname)) return false;
    return views.includes(u.pathname.slice(dir(u.pathname).length));
  }
  // flameDraws reports whether the page shown is a flame graph that
  // draws u itself (another query of the same page).
  function flameDraws(u) {
    return u.pathname === new URL(shown).pathname && !!(window.culpritFlame && window.culpritFlame.stacks);
  }
  // swap puts the page href in place of this one (push: as a new entry of
  // the history), or loads it when it cannot.
  function swap(href, push1) {
    const t0 = performance.now();
    wanted = href;
    // Loaded instead: as a new entry of the history, or in place of the
    // entry back or forward led to.
    const leave = () => { if (wanted === href) { if (push1) location.assign(href); else location.replace(href); } return false; };
    return fetch(href).then(r => {
      if (!r.ok || !(r.headers.get("Content-Type") || "").startsWith("text/html")) return Promise.reject(r.status);
      return r.text();
    }).then(text => {
      if (wanted !== href) return false; // a later choice came first
      const t1 = performance.now();
      const doc = new DOMParser().parseFromString(text, "text/html");
      const next = doc.querySelector("script[data-culprit-swap]");
      if (!next) return leave(); // not one of the pages culprit serves
      ownPage = next.hasAttribute("data-own");
      const t2 = performance.now();
      if (push1) push(null, "", href);
      shown = noHash(href);
      for (const [remove, type, fn, opts] of added) remove(type, fn, opts);
      added = [];
      if (window.culpritFlame) window.culpritFlame = null;
      document.title = doc.title;
      document.head.replaceChildren(...Array.from(doc.head.childNodes).map(n => document.adoptNode(n)));
      document.body.replaceWith(document.adoptNode(doc.body));
      // Scripts parsed apart do not run: each is run by a copy of it.
      for (const old of document.querySelectorAll("script")) {
        if (old.hasAttribute("data-culprit-swap")) continue;
        const s = document.createElement("script");
        for (const a of old.attributes) s.setAttribute(a.name, a.value);
        s.textContent = old.textContent;
        old.replaceWith(s);
      }
      window.scrollTo(0, 0);
      const t3 = performance.now();
      return new Promise(done => requestAnimationFrame(() => setTimeout(() => {
        // ms: from the click to the frame drawn; of which fetch (the
        // server's answer), parse (the HTML) and run (put in place, and
        // pprof's scripts run).
        window.culpritSwapped = {href: href, ms: performance.now() - t0, fetch: t1 - t0, parse: t2 - t1, run: t3 - t2};
        document.documentElement.dataset.culpritSwapped = href;
        done(true);
      }, 0)));
    }).catch(leave);
  }
  window.culpritSwap = swap;
  swap.own = ownViews; // culprit's pages it puts in place
  own.document("click", e => {
    if (e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
    const a = e.target instanceof Element ? e.target.closest("a[href]") : null;
    if (!a || (a.target && a.target !== "_self") || a.hasAttribute("download")) return;
    const u = new URL(a.href, location.href);
    if (noHash(u.href) === noHash(location.href) || !inUI(u) || flameDraws(u)) return;
    e.preventDefault();
    swap(u.href, true);
  });
  // Back and forward: the entries of this document's history are the
  // pages put in place (culprit's pages push none of their own; a frame's
  // are the frame's), so the URL shown is put in place too.
  own.window("popstate", () => {
    const now = noHash(location.href);
    if (now === shown) return;
    if (flameDraws(new URL(now))) { shown = now; return; }
    swap(now, false);
  });
})();
</script>`
