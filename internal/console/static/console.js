// weir console: live updates by server-sent events, the record browser
// and the action forms. Everything else is server-rendered HTML.
"use strict";

(function () {
  const status = document.getElementById("status");
  const say = (text) => { if (status) status.textContent = text; };

  // Live part: replaced by each event of the page's stream. The stream
  // is what keeps the view collected; closing the page ends it.
  const live = document.getElementById("live");
  if (live && live.dataset.stream && window.EventSource) {
    const es = new EventSource(live.dataset.stream);
    es.addEventListener("open", () => say("live updates: on"));
    es.addEventListener("error", () => say("live updates: reconnecting…"));
    es.addEventListener("live", (ev) => {
      let msg;
      try { msg = JSON.parse(ev.data); } catch (e) { say("live updates: bad event"); return; }
      if (typeof msg.html === "string") {
        live.innerHTML = msg.html;
        live.dataset.updated = String(Date.now());
      }
      say(msg.error ? "live updates: " + msg.error : "live updates: on · " + new Date().toLocaleTimeString());
    });
    window.addEventListener("pagehide", () => es.close());
  } else if (status && live) {
    say("live updates: off (reload to refresh)");
  }

  // Record browser: the fragment comes back as HTML.
  const browse = document.getElementById("browse");
  if (browse) {
    browse.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const out = document.getElementById("records");
      const q = new URLSearchParams();
      for (const [k, v] of new FormData(browse)) {
        if (String(v).trim() !== "") q.set(k, String(v));
      }
      out.textContent = "loading…";
      try {
        const resp = await fetch("/records?" + q.toString());
        out.innerHTML = await resp.text();
      } catch (e) {
        out.textContent = "failed: " + e;
      }
    });
  }

  // Action forms post to the API and show its answer in their output.
  const showResult = (out, status, res) => {
    out.replaceChildren();
    const p = document.createElement("p");
    p.className = res.ok ? "ok" : "error";
    p.setAttribute("role", res.ok ? "status" : "alert");
    p.textContent = (res.ok ? "✓ " : "✗ ") + (res.message || ("HTTP " + status));
    out.appendChild(p);
    if (res.preview && res.preview.length) {
      const t = document.createElement("table");
      t.className = "data preview";
      t.innerHTML = "<thead><tr><th>partition</th><th class=num>from</th><th class=num>to</th></tr></thead>";
      const tb = document.createElement("tbody");
      for (const c of res.preview) {
        const tr = document.createElement("tr");
        for (const v of [c.topic + "-" + c.partition, c.from < 0 ? "none" : c.from, c.to]) {
          const td = document.createElement("td");
          td.textContent = String(v);
          tr.appendChild(td);
        }
        tr.children[1].className = tr.children[2].className = "num";
        tb.appendChild(tr);
      }
      t.appendChild(tb);
      out.appendChild(t);
    }
    if (res.details && res.details.length) {
      const ul = document.createElement("ul");
      for (const d of res.details) {
        const li = document.createElement("li");
        li.textContent = d;
        ul.appendChild(li);
      }
      out.appendChild(ul);
    }
  };
  const post = async (form, dry) => {
    const out = form.querySelector("output");
    const body = new URLSearchParams();
    for (const [k, v] of new FormData(form)) body.append(k, String(v));
    if (dry) body.set("dry_run", "1");
    out.textContent = "working…";
    try {
      const resp = await fetch(form.dataset.action, {
        method: "POST", body, headers: { "X-Weir-Console": "1" },
      });
      const res = await resp.json();
      showResult(out, resp.status, res);
    } catch (e) {
      out.textContent = "✗ failed: " + e;
    }
  };
  for (const form of document.querySelectorAll("form.action")) {
    form.addEventListener("submit", (ev) => { ev.preventDefault(); post(form, false); });
    const preview = form.querySelector("button.preview");
    if (preview) preview.addEventListener("click", () => post(form, true));
  }
})();
