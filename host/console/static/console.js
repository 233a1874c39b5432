// agent-worker console: live updates over the daemon's event stream.
// Every page is complete without this script; it only keeps pages current
// and sends the message box without a reload. It builds no markup itself:
// new content is HTML the server rendered (and escaped).
(function () {
  "use strict";
  var meta = document.querySelector('meta[name="csrf-token"]');
  var csrf = meta ? meta.content : "";

  function get(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.text() : "";
    });
  }

  // refresh swaps every [data-refresh] element for its current copy.
  var timer = null;
  function refresh() {
    if (timer) return;
    timer = setTimeout(function () {
      timer = null;
      get(location.href).then(function (html) {
        if (!html) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-refresh][id]").forEach(function (el) {
          var fresh = doc.getElementById(el.id);
          if (fresh) el.replaceWith(document.importNode(fresh, true));
        });
      });
    }, 300);
  }

  // The channel appends new messages, and follows them down unless the
  // reader has scrolled up.
  var channel = document.getElementById("channel");
  var load = refresh;
  if (channel) {
    var list = document.getElementById("messages");
    var newer = document.getElementById("newer");
    var after = channel.dataset.after, busy = false, again = false;
    var atBottom = function () {
      return channel.scrollHeight - channel.scrollTop - channel.clientHeight < 40;
    };
    channel.scrollTop = channel.scrollHeight;
    channel.addEventListener("scroll", function () {
      if (atBottom()) newer.hidden = true;
    });
    newer.addEventListener("click", function () {
      channel.scrollTop = channel.scrollHeight;
      newer.hidden = true;
    });
    load = function () {
      if (busy) { again = true; return; }
      busy = true;
      get(channel.dataset.fragment + "?after=" + encodeURIComponent(after)).then(function (html) {
        if (!html.trim()) return;
        var stick = atBottom();
        list.insertAdjacentHTML("beforeend", html);
        after = list.lastElementChild.dataset.seq;
        if (stick) channel.scrollTop = channel.scrollHeight;
        else newer.hidden = false;
      }).finally(function () {
        busy = false;
        if (again) { again = false; load(); }
      });
    };
  }

  var source = document.querySelector("[data-stream]");
  if (source && window.EventSource) {
    var es = new EventSource(source.dataset.stream);
    es.addEventListener("message", function () { load(); });
    ["agent_state", "run_started", "run_finished", "run_failed", "workflow", "idle", "event"].forEach(function (kind) {
      es.addEventListener(kind, refresh);
    });
    es.addEventListener("end", function () { es.close(); refresh(); });
    document.documentElement.dataset.live = "on";
  }

  // Forms marked data-async are sent without leaving the page.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.matches("form[data-async]")) return;
    ev.preventDefault();
    var note = form.querySelector(".err") || form.appendChild(document.createElement("p"));
    note.className = "err";
    note.textContent = "";
    fetch(form.action, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf }, body: new URLSearchParams(new FormData(form))
    }).then(function (r) {
      if (r.status === 204) { form.reset(); return; }
      return r.text().then(function (html) {
        var d = new DOMParser().parseFromString(html, "text/html").querySelector(".detail");
        note.textContent = d ? d.textContent : "The daemon answered " + r.status + ".";
      });
    }, function () { note.textContent = "The daemon did not answer."; });
  });

  // Ctrl+Enter (or Cmd+Enter) sends the message box.
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && ev.target.form && ev.target.form.matches("form[data-async]")) {
      ev.preventDefault();
      ev.target.form.requestSubmit();
    }
  });
})();
