package view

import (
	"encoding/json"
	"html/template"
	"strings"
)

// Loading one of pprof's pages costs the browser more than the server:
// a new document, pprof's styles and scripts parsed and compiled again,
// its data parsed. So a link or a GET form from any page culprit serves
// to another of them (swapScript) is answered in place: the page fetches
// the other page's HTML, puts its head and body in place of its own in
// the same document, and runs its scripts, after removing the listeners
// the old page's scripts added to the window and the document (those on
// its elements go with them). The URL follows (history.pushState; the
// URL a redirect ends at), and back and forward show the URL shown the
// same way. The pages' scripts run as they would on the page loaded: they
// read the same elements and the same URL. The pages are the index,
// every page of Pages, and the views of pprof's UIs (pprof's, of any
// time range, and the off-CPU flame graph's): pprof's View, Sample,
// Refine and Config menus, its flame graph's action menu and title link,
// culprit's links atop every page, the index's, a function's links and
// its form, and the links of a page's frames that open in the top page
// (a function's name in the contexts page's heat map and tree). A link that leaves them (a page's data or drawing, the
// download), an error answer, or an answer that is not one of the pages
// culprit serves loads the page instead. A flame graph page draws
// another query of itself in place by its own script (flameScript),
// which swapScript leaves it to.

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
// pages that swapScript puts in place: the index and every page.
func swapOwnViews() []string {
	out := []string{""}
	for _, pg := range Pages {
		out = append(out, pg.Path)
	}
	return out
}

// swapUIs are the first path elements, below the server's root, of
// pprof's UIs (UI/RANGE/VIEW): pprof's own and the pages' that serve
// one (Page.UI). Their views are put in place.
func swapUIs() []string {
	out := []string{"pprof"}
	for _, pg := range Pages {
		if pg.UI {
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
	uis, _ := json.Marshal(swapUIs())
	swapScriptHTML = strings.NewReplacer("OWNVIEWS", string(own), "UIS", string(uis), "VIEWS", string(views)).Replace(swapScript)
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
  // The pages put in place: below the server's root, culprit's
  // (ownViews), and pprof's views (UI/RANGE/VIEW, UI one of uis).
  const views = VIEWS, ownViews = OWNVIEWS, uis = UIS;
  // On one of culprit's own pages (data-own) or on pprof's.
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
    const r = root(location.pathname);
    if (u.origin !== location.origin || !u.pathname.startsWith(r)) return false;
    const rel = u.pathname.slice(r.length);
    if (ownViews.includes(rel)) return true;
    const m = rel.match(/^([^/]+)\/[^/]+\/([^/]*)$/);
    return !!m && uis.includes(m[1]) && views.includes(m[2]);
  }
  // flameDraws reports whether the page shown is a flame graph that
  // draws u itself (another query of the same page).
  function flameDraws(u) {
    return u.pathname === new URL(shown).pathname && !!(window.culpritFlame && window.culpritFlame.stacks);
  }
  // swap puts the page href in place of this one (push: as a new entry of
  // the history), or loads it when it cannot; at is when the input that
  // asked for it happened (ms since the epoch: performance.timeOrigin +
  // the event's timeStamp), if one did.
  function swap(href, push1, at) {
    const t0 = performance.now();
    wanted = href;
    // Loaded instead: as a new entry of the history, or in place of the
    // entry back or forward led to.
    const leave = () => { if (wanted === href) { if (push1) location.assign(href); else location.replace(href); } return false; };
    let to = href; // where a redirect ends (the off-CPU page's)
    return fetch(href).then(r => {
      if (!r.ok || !(r.headers.get("Content-Type") || "").startsWith("text/html")) return Promise.reject(r.status);
      if (r.redirected) to = r.url;
      return r.text();
    }).then(text => {
      if (wanted !== href) return false; // a later choice came first
      if (to !== href && (!inUI(new URL(to)) || !push1)) return leave();
      const t1 = performance.now();
      const doc = new DOMParser().parseFromString(text, "text/html");
      const next = doc.querySelector("script[data-culprit-swap]");
      if (!next) return leave(); // not one of the pages culprit serves
      ownPage = next.hasAttribute("data-own");
      const t2 = performance.now();
      if (push1) push(null, "", to);
      shown = noHash(to);
      for (const [remove, type, fn, opts] of added) remove(type, fn, opts);
      added = [];
      if (window.culpritFlame) window.culpritFlame = null;
      document.title = doc.title;
      document.head.replaceChildren(...Array.from(doc.head.childNodes).map(n => document.adoptNode(n)));
      // The new body goes before the old one, which is the document's
      // body no more, and the old one, hidden, is removed once the new
      // one is drawn: removing a page's frames (the contexts page's)
      // tears their documents down, tens of milliseconds the new page
      // would otherwise wait for.
      const old = document.body, body = document.adoptNode(doc.body);
      old.style.display = "none";
      document.documentElement.insertBefore(body, old);
      // Scripts parsed apart do not run: each is run by a copy of it.
      for (const el of [...document.head.querySelectorAll("script"), ...body.querySelectorAll("script")]) {
        if (el.hasAttribute("data-culprit-swap")) continue;
        const s = document.createElement("script");
        for (const a of el.attributes) s.setAttribute(a.name, a.value);
        s.textContent = el.textContent;
        el.replaceWith(s);
      }
      window.scrollTo(0, 0);
      const t3 = performance.now();
      return new Promise(done => requestAnimationFrame(() => setTimeout(() => {
        // ms: from the click to the frame drawn; of which fetch (the
        // server's answer), parse (the HTML) and run (put in place, and
        // pprof's scripts run); input, from the input event (its
        // timeStamp: before the page's handlers ran) to the frame drawn.
        const now = performance.now();
        window.culpritSwapped = {href: to, ms: now - t0, fetch: t1 - t0, parse: t2 - t1, run: t3 - t2};
        if (at !== undefined) window.culpritSwapped.input = performance.timeOrigin + now - at;
        document.documentElement.dataset.culpritSwapped = to;
        old.remove();
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
    swap(u.href, true, performance.timeOrigin + e.timeStamp);
  });
  // A form that asks for a page by GET (a function's name) is put in
  // place as the link with its fields would be.
  own.document("submit", e => {
    const f = e.target;
    if (e.defaultPrevented || !(f instanceof HTMLFormElement) || f.method !== "get" || (f.target && f.target !== "_self")) return;
    const u = new URL(f.action, location.href);
    u.search = new URLSearchParams(new FormData(f, e.submitter)).toString();
    u.hash = "";
    if (!inUI(u) || flameDraws(u)) return;
    e.preventDefault();
    swap(u.href, noHash(u.href) !== noHash(location.href), performance.timeOrigin + e.timeStamp);
  });
  // A link in one of the page's frames (the contexts page's heat map and
  // tree, the time view's flame graph) that opens in the top page
  // (target _top) is put in place of it the same way. The frames are of
  // the page's origin: their clicks are heard here, each frame's
  // document as it loads.
  function hookFrame(f) {
    let d = null;
    try { d = f.contentDocument; } catch (_) { return; }
    if (!d || d.culpritHooked) return;
    d.culpritHooked = true;
    d.addEventListener("click", e => {
      if (e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      // Elements of the frame's window: not instances of this one's.
      const a = e.target && e.target.closest ? e.target.closest("a") : null;
      const href = a && (a.getAttribute("href") || a.getAttributeNS("http://www.w3.org/1999/xlink", "href"));
      if (!href || a.getAttribute("target") !== "_top" || a.hasAttribute("download")) return;
      const u = new URL(href, d.baseURI);
      if (!inUI(u) || flameDraws(u)) return;
      e.preventDefault();
      // The click's own timeStamp may count from either window's
      // origin (a click a script of this page dispatched in the frame
      // counts from this one's): the time is counted from here.
      swap(u.href, true, performance.timeOrigin + performance.now());
    });
  }
  own.document("load", e => { if (e.target && e.target.nodeName === "IFRAME") hookFrame(e.target); }, true);
  for (const f of document.querySelectorAll("iframe")) hookFrame(f);
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
