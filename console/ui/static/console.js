// sqsworker console: live job progress and worker statistics. The pages
// work without it; it only refreshes numbers.
"use strict";

function poll(url, every, fn) {
  const tick = () => fetch(url, { credentials: "same-origin", cache: "no-store" })
    .then((r) => (r.ok ? r.json() : Promise.reject(r.status)))
    .then((v) => { if (fn(v) !== false) setTimeout(tick, every); })
    .catch(() => setTimeout(tick, every * 4));
  tick();
}

function set(id, v) {
  const el = document.getElementById(id);
  if (el) el.textContent = v;
}

document.addEventListener("DOMContentLoaded", () => {
  const job = document.getElementById("job");
  if (job) {
    poll(job.dataset.status, 500, (st) => {
      for (const k of ["scanned", "matched", "moved", "deleted", "sent", "duplicated", "skipped", "failed"]) set("job-" + k, st[k]);
      set("job-notseen", st.notSeen);
      set("job-cameback", st.cameBack);
      set("job-error", st.error || "");
      set("job-note", st.note || "");
      const bar = document.getElementById("job-progress");
      if (bar) { bar.max = st.total || 1; bar.value = Math.min(st.scanned, bar.max); }
      set("job-state", st.finished ? (st.ok ? "done" : "failed") : "running");
      return !st.finished;
    });
  }
  const workers = document.getElementById("workers");
  if (workers) {
    poll(workers.dataset.stats, 2000, (list) => {
      for (const w of list) {
        const row = workers.querySelector(`tr[data-worker="${CSS.escape(w.name)}"]`);
        if (!row) continue;
        for (const cell of row.querySelectorAll("td[data-k]")) {
          const v = w[cell.dataset.k] || 0;
          if (typeof v === "string") {
            cell.textContent = v;
            cell.className = v === "paused" ? "bad" : "ok";
            continue;
          }
          cell.textContent = Number.isInteger(v) ? v : v.toFixed(cell.dataset.k.endsWith("Second") ? 1 : 2);
        }
      }
    });
  }
  // A form is sent once: a second click would start a second job. The
  // buttons are disabled after the submit event, once the browser has
  // taken the clicked button's value (a disabled button sends none).
  for (const form of document.querySelectorAll("form[method=post]")) {
    form.addEventListener("submit", () => {
      setTimeout(() => {
        for (const b of form.querySelectorAll("button")) b.disabled = true;
        if (form.id) for (const b of document.querySelectorAll(`button[form="${CSS.escape(form.id)}"]`)) b.disabled = true;
      }, 0);
    });
  }
});
