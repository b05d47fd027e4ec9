// Step through a logged round: the event, the referee's decision and the tower after it.
"use strict";
const steps = JSON.parse(document.getElementById("steps-data").textContent);
const el = (id) => document.getElementById(id);

function describe(ev) {
  const fields = Object.entries(ev).filter(([k]) => k !== "event" && k !== "tower")
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(", ") : v}`);
  return `${ev.event}${fields.length ? " — " + fields.join(" · ") : ""}`;
}

function evidenceText(ev, prefix = "") {
  return Object.entries(ev).filter(([k]) => k !== "traces").map(([k, v]) =>
    v && typeof v === "object" && !Array.isArray(v) ? evidenceText(v, prefix + k + ".") : `${prefix}${k} ${v}`).join(" · ");
}

function show(i) {
  if (!steps.length) { el("step-no").textContent = "no events logged"; return; }
  i = Math.max(0, Math.min(steps.length - 1, i));
  el("step").value = i;
  const s = steps[i];
  el("step-no").textContent = `event ${s.seq} of ${steps.length}` + (s.void ? " (voided)" : "");
  el("step-event").textContent = describe(s.event);
  el("step-event").classList.toggle("voided", !!s.void);
  const say = el("step-say");
  say.replaceChildren();
  const out = s.output || {};
  if (s.void) say.appendChild(Object.assign(document.createElement("li"), {className: "void-note",
    textContent: `voided (taken back${s.void.reason ? ": " + s.void.reason : ""}, ${new Date(s.void.t * 1000).toLocaleTimeString()}) — the round goes on without it`}));
  if (out.ok === false) say.appendChild(Object.assign(document.createElement("li"), {className: "foul", textContent: "refused: " + out.error}));
  for (const f of out.fouls || []) say.appendChild(Object.assign(document.createElement("li"), {className: "foul", textContent: `Foul: ${f.player} (${f.rule})`}));
  for (const line of out.say || []) say.appendChild(Object.assign(document.createElement("li"), {textContent: line}));
  el("step-evidence").textContent = s.evidence ? "evidence: " + evidenceText(s.evidence) : "";
  renderTower(el("tower"), s.tower, null);
  renderHand(el("hand"), s.hand);
}

el("step").addEventListener("input", () => show(+el("step").value));
el("first").addEventListener("click", () => show(0));
el("last").addEventListener("click", () => show(steps.length - 1));
el("prev").addEventListener("click", () => show(+el("step").value - 1));
el("next").addEventListener("click", () => show(+el("step").value + 1));
document.addEventListener("keydown", (e) => {
  if (e.key === "ArrowRight") show(+el("step").value + 1);
  if (e.key === "ArrowLeft") show(+el("step").value - 1);
});
show(0);
