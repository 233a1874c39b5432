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

  // The "Needs you" panel lists what agents wait for the owner to answer
  // or approve, and workflow edits waiting to be accepted (their items
  // carry a data-question of their own, "edit:<workflow>:<since>"). Its items are fetched again when the stream says a
  // question was asked or decided, or an agent's state changed (a pause
  // ends its approvals). Items still shown are kept as they are, so an
  // answer being typed survives; its error line stays until the next try.
  var panel = document.getElementById("needs-you");
  var panelTimer = null;
  var decides = /asks the owner \(|waits for approval \(| (approved|denied) q_|answer to q_/;
  function showPanel() {
    panel.hidden = !panel.querySelector("[data-question]") && document.getElementById("needs-you-error").hidden;
  }
  function refreshPanel() {
    if (!panel || panelTimer) return;
    panelTimer = setTimeout(function () {
      panelTimer = null;
      fetch(panel.dataset.needsYou, { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) return;
        return r.text().then(function (html) {
          var list = document.getElementById("needs-you-items");
          var doc = new DOMParser().parseFromString("<ol>" + html + "</ol>", "text/html");
          var shown = {};
          list.querySelectorAll("[data-question]").forEach(function (li) { shown[li.dataset.question] = li; });
          var keep = [];
          doc.querySelectorAll("li[data-question]").forEach(function (li) {
            var old = shown[li.dataset.question];
            delete shown[li.dataset.question];
            if (old && old.querySelector("time") && li.querySelector("time")) {
              old.querySelector("time").textContent = li.querySelector("time").textContent;
            }
            keep.push(old || document.importNode(li, true));
          });
          Object.keys(shown).forEach(function (id) { shown[id].remove(); });
          keep.forEach(function (li, i) {
            if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
          });
          showPanel();
        });
      }, function () {});
    }, 150);
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
    // A link to a message (a search hit: #m<seq>) opens the channel at it.
    var shown = location.hash && document.getElementById(location.hash.slice(1));
    if (shown && list.contains(shown)) shown.scrollIntoView({block: "center"});
    else channel.scrollTop = channel.scrollHeight;
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
    es.addEventListener("message", function (ev) {
      load();
      try {
        if (decides.test(JSON.parse(ev.data).content)) refreshPanel();
      } catch (e) { /* not a message */ }
    });
    ["agent_state", "run_started", "run_finished", "run_failed", "workflow", "idle", "event", "effort"].forEach(function (kind) {
      es.addEventListener(kind, function () { refresh(); refreshPanel(); });
    });
    // (Re)connected: what was asked while the stream was down shows too.
    es.addEventListener("open", refreshPanel);
    es.addEventListener("end", function () { es.close(); refresh(); refreshPanel(); });
    document.documentElement.dataset.live = "on";
  }

  // Forms marked data-async are sent without leaving the page.
  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    if (!form.matches("form[data-async]")) return;
    ev.preventDefault();
    // A button of the "Needs you" panel: its item leaves once answered;
    // a refusal shows in the panel's error line.
    var item = panel && form.closest("[data-question]");
    var note = item ? document.getElementById("needs-you-error") : form.querySelector(".err") || form.appendChild(document.createElement("p"));
    var buttons = item ? item.querySelectorAll("button") : [];
    var body = new URLSearchParams(new FormData(form));
    note.className = "err";
    note.textContent = "";
    if (item) {
      note.hidden = true;
      item.classList.add("busy");
      buttons.forEach(function (b) { b.disabled = true; });
    }
    var fail = function (text) {
      note.textContent = text;
      if (!item) return;
      note.hidden = false;
      item.classList.remove("busy");
      buttons.forEach(function (b) { b.disabled = false; });
      showPanel();
      refreshPanel();
    };
    fetch(form.action, {
      method: "POST", credentials: "same-origin",
      headers: { "X-CSRF-Token": csrf }, body: body
    }).then(function (r) {
      if (r.status === 204) {
        form.reset();
        if (item) { item.remove(); showPanel(); refreshPanel(); }
        return;
      }
      return r.text().then(function (html) {
        var d = new DOMParser().parseFromString(html, "text/html").querySelector(".detail");
        fail(d ? d.textContent : "The daemon answered " + r.status + ".");
      });
    }, function () { fail("The daemon did not answer."); });
  });

  // Ctrl+Enter (or Cmd+Enter) sends the message box.
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && ev.target.form && ev.target.form.matches("form[data-async]")) {
      ev.preventDefault();
      ev.target.form.requestSubmit();
    }
  });
})();
