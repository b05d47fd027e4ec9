// The live table: follows the referee over server-sent events, reconnects and catches up.
"use strict";
const S = {lastId: null, epoch: null, seen: new Set(), players: [], table: false, csrf: null,
           frame: null, report: null, es: null};
const $ = (id) => document.getElementById(id);
const FOUL_WORDS = {"wrong-block": "wrong block", "action-in-draw": "action block while drawing", level: "pulled from a forbidden level",
                    "early-level": "started a new level early", "two-hands": "two hands (Uno!)", "out-of-turn": "out of turn"};
const COLOR_WORDS = {wild_color: "name the Wild's color", penalty_color: "name the penalty color"};

function toast(text, good) {
  // "sent" must not hide a refusal that came back over the stream a moment before the reply
  if (good && Date.now() - (S.badAt || 0) < 2000) return;
  if (!good) S.badAt = Date.now();
  const t = $("toast");
  t.textContent = text;
  t.className = "toast " + (good ? "good" : "bad");
  t.hidden = false;
  clearTimeout(S.toastTimer);
  S.toastTimer = setTimeout(() => { t.hidden = true; }, 4000);
}

function setConn(ok) {
  const c = $("conn");
  c.textContent = ok ? "live" : "reconnecting…";
  c.className = "conn " + (ok ? "on" : "off");
  document.body.classList.toggle("offline", !ok);
}

function connect() {
  if (S.es) S.es.close();
  const url = "/api/stream" + (S.lastId ? "?since=" + encodeURIComponent(S.lastId) : "");
  const es = new EventSource(url);
  S.es = es;
  es.addEventListener("state", (ev) => {
    if (ev.lastEventId) S.lastId = ev.lastEventId;
    setConn(true);
    onMessage(JSON.parse(ev.data));
  });
  es.onopen = () => setConn(true);
  es.onerror = () => {
    setConn(false);
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 1500);
  };
}

function callView(report) {
  const call = report.call || {};
  const box = $("call");
  box.replaceChildren();
  let text = "";
  if (report.over) {
    text = "round over";
  } else if (report.waiting_for) {
    box.append(Object.assign(document.createElement("span"), {className: "swatch big-swatch swatch-wild"}),
               Object.assign(document.createElement("span"), {className: "ask", textContent: "color?"}));
    text = report.waiting_for === "penalty_color" ? "waiting for the penalty color" : "waiting for the Wild's color";
  } else if (call.free) {
    box.appendChild(Object.assign(document.createElement("span"), {className: "any", textContent: "any block"}));
    text = call.count > 1 ? `${call.count} blocks` : "free pull";
  } else {
    if (call.count > 1) box.appendChild(Object.assign(document.createElement("span"), {className: "count", textContent: call.count + "×"}));
    for (const c of call.colors || []) {
      box.appendChild(Object.assign(document.createElement("span"), {className: "swatch big-swatch swatch-" + c, title: c, textContent: ""}));
    }
    for (const n of call.numbers || []) {
      box.appendChild(Object.assign(document.createElement("span"), {className: "number", textContent: n}));
    }
    const n = call.count > 1 ? call.count : 1;
    const noun = (call.numbers_only ? "number block" : "block") + (n > 1 ? "s" : "");
    const colors = (call.colors || []).join(" or ");
    const numbers = (call.numbers || []).join(" or ");
    text = colors ? `${n > 1 ? n : "a"} ${colors} ${noun}` + (numbers ? ` or a ${numbers}` : "")
                  : (numbers ? `a ${numbers}` : `${n > 1 ? n : "a"} ${noun}`);
  }
  $("call-text").textContent = text;
}

function addFeed(msg) {
  const feed = $("feed");
  const report = msg.report || {};
  const roundKey = `${report.match || ""}/${report.round || ""}`;
  if (roundKey !== S.roundKey) { S.roundKey = roundKey; $("fouls").replaceChildren(); }
  for (const f of report.fouls || []) {
    $("fouls").prepend(Object.assign(document.createElement("li"), {className: "foul", textContent: `${f.player}: ${FOUL_WORDS[f.rule] || f.rule}`}));
  }
  const foulWords = /foul|penalt|Uno!/i;
  for (const line of msg.say || []) {
    feed.prepend(Object.assign(document.createElement("li"), {textContent: line, className: foulWords.test(line) ? "foul" : ""}));
  }
  while (feed.children.length > 40) feed.lastChild.remove();
}

function fillSelect(sel, names, preferred) {
  const keep = sel.value;
  sel.replaceChildren(...names.map((n) => Object.assign(document.createElement("option"), {value: n, textContent: n})));
  if (names.includes(keep)) sel.value = keep;
  else if (preferred && names.includes(preferred)) sel.value = preferred;
}

function onMessage(msg) {
  if (msg.epoch !== S.epoch) {
    if (S.epoch) refreshSession();  // a restarted referee: this browser's unlock and token are void
    S.epoch = msg.epoch; S.seen.clear(); $("feed").replaceChildren(); $("fouls").replaceChildren(); S.roundKey = null; }
  const fresh = !msg.seq || !S.seen.has(msg.seq);
  if (msg.seq) S.seen.add(msg.seq);
  if (fresh) addFeed(msg);
  render(msg);
  const r = msg.report || {};
  // a refusal just now (not one replayed from the round so far): shown, not only said
  if (fresh && msg.seq && r.ok === false && r.error && Date.now() / 1000 - (msg.t || 0) < 10) toast(r.error, false);
}

function render(msg) {
  const r = msg.report || {};
  S.report = r;
  document.body.dataset.seq = msg.seq || 0;  // which state is on screen (tests wait on it)
  if (Array.isArray(r.players)) S.players = r.players;
  $("camera-problem").hidden = !r.camera;  // the referee is blind until the camera sees again
  $("camera-reason").textContent = r.camera || "";
  $("turn").textContent = r.turn || (r.over ? "round over" : "waiting");
  $("turn").classList.toggle("nobody", !r.turn);
  const seat = S.players.indexOf(r.turn);
  $("seat").textContent = seat >= 0 ? `seat ${seat + 1} of ${S.players.length}` : "";
  const cw = (r.direction || "clockwise") === "clockwise";
  $("direction").textContent = cw ? "↻ clockwise" : "↺ counterclockwise";
  $("direction").className = "direction " + (cw ? "cw" : "ccw");
  callView(r);
  const over = $("over");
  over.hidden = !r.over;
  if (r.over) over.textContent = [r.loser ? `${r.loser} lost` : "nobody lost", r.winner ? `${r.winner} won` : "no winner"].join(" · ");
  const waiting = $("waiting");
  waiting.hidden = !r.waiting_for;
  if (r.waiting_for) $("waiting-text").textContent = `${r.turn || "?"}: ${COLOR_WORDS[r.waiting_for] || r.waiting_for}`;
  renderTower($("tower"), Array.isArray(r.tower) ? r.tower : [], $("tower-info"));
  const hand = r.hand && typeof r.hand === "object" ? r.hand.block : r.hand;
  renderHand($("hand"), hand);
  if (msg.frame && msg.frame !== S.frame) {
    S.frame = msg.frame;
    $("frame").src = "/api/frame.jpg?seq=" + msg.frame;
    $("frame").hidden = false;
    $("no-frame").hidden = true;
  }
  renderStandings(r);
  renderQuestion(r.question, r.ok === false);
  renderCalibration(r.calibration);
  renderCorrections(r);
  const others = S.players.filter((p) => p !== r.turn);
  fillSelect($("uno-caller"), S.players, others[0]);
  fillSelect($("uno-offender"), S.players, r.turn);
  if (!$("setup-names").value && S.players.length) $("setup-names").value = S.players.join("\n");
}

function renderStandings(r) {
  const table = r.standings && typeof r.standings === "object" ? r.standings : null;
  $("match-card").hidden = !table && !r.round;
  $("round-no").textContent = r.round ? `round ${r.round}` : "";
  const body = $("standings");
  body.replaceChildren();
  if (!table) return;
  const names = S.players.length ? S.players : Object.keys(table);
  for (const name of names) {
    const s = table[name] || {};
    const tr = document.createElement("tr");
    for (const v of [name, s.wins || 0, s.losses || 0, s.fouls || 0]) tr.appendChild(Object.assign(document.createElement("td"), {textContent: v}));
    body.appendChild(tr);
  }
}

function renderQuestion(q, refused) {
  const box = $("question");
  const has = q && typeof q === "object" && Array.isArray(q.options);
  box.hidden = !has;
  if (!has) { S.questionId = null; return; }
  $("question-text").textContent = q.text || "";
  if (S.questionId === q.id) {  // the same question: keep the buttons; after a refusal the table may tap again
    if (refused) for (const b of document.querySelectorAll(".answer-btn")) b.disabled = false;
    return;
  }
  S.questionId = q.id;
  const labels = Array.isArray(q.labels) && q.labels.length === q.options.length ? q.labels : q.options;
  $("answers").replaceChildren(...q.options.map((opt, i) => {
    const b = Object.assign(document.createElement("button"), {className: "answer-btn", textContent: labels[i]});
    b.dataset.option = opt;
    b.addEventListener("click", async () => {
      for (const other of document.querySelectorAll(".answer-btn")) other.disabled = true;
      const {res} = await post("/api/actions", {action: "answer", question: q.id, option: opt});
      if (res.ok) toast(`answer sent: ${labels[i]}`, true);
      else for (const other of document.querySelectorAll(".answer-btn")) other.disabled = false;
    });
    return b;
  }));
}

function minutes(s) {
  return s >= 90 ? `about ${Math.round(s / 60)} min` : `about ${Math.max(0, Math.round(s))} s`;
}

// The guided calibration (stacko calibrate --page): the open instruction, a Done button, the verdicts so far.
function renderCalibration(c) {
  const box = $("calibration");
  const has = !!c && typeof c === "object";
  box.hidden = !has;
  document.body.classList.toggle("calibrating", has);
  if (!has) return;
  const ins = c.instruction && typeof c.instruction === "object" ? c.instruction : null;
  $("cal-step").textContent = c.step_no && c.steps ? `· step ${c.step_no} of ${c.steps.length}: ${c.step}` : "";
  $("cal-left").textContent = c.finished ? "" : (c.person_s_left != null ? `· ${minutes(c.person_s_left)} left` : "");
  const text = $("cal-instruction");
  if (ins) text.textContent = ins.text;
  else if (c.finished) text.textContent = c.ok ? "Calibration complete" : "Calibration stopped: see the failed step";
  else text.textContent = (c.recent || []).slice(-1)[0] || "The referee is measuring…";
  text.classList.toggle("idle", !ins);
  const meta = [];
  if (ins && ins.grams) meta.push(`${ins.grams} g`);
  if (ins && ins.seconds) meta.push(`takes ${minutes(ins.seconds)}`);
  if (ins && ins.by === "twin") meta.push("the twin does it by itself");
  $("cal-meta").textContent = meta.join(" · ");
  const done = $("cal-done");
  const tap = !!ins && ins.by === "table";
  done.hidden = !tap;
  if (tap && S.calKey !== ins.key) { S.calKey = ins.key; done.disabled = false; }
  $("cal-unlock").textContent = tap ? "Unlock with the table PIN (shown on the referee's console) to tap Done." : "";
  $("cal-results").replaceChildren(...(c.results || []).map((res) => {
    const li = Object.assign(document.createElement("li"), {className: "grade-" + res.grade});
    li.append(Object.assign(document.createElement("span"), {className: "cal-grade", textContent: res.grade}),
              Object.assign(document.createElement("span"), {textContent: res.step}));
    const lines = Object.assign(document.createElement("ul"), {className: "cal-lines"});
    for (const line of res.lines || []) lines.appendChild(Object.assign(document.createElement("li"), {textContent: line}));
    li.appendChild(lines);
    return li;
  }));
  $("cal-recent").replaceChildren(...(c.recent || []).slice().reverse().map((line) =>
    Object.assign(document.createElement("li"), {textContent: line})));
}

const WHERE_OTHER = "other";

function renderCorrections(r) {
  $("undo").disabled = r.can_undo === false;
  fillSelect($("ev-player"), [""].concat(S.players), "");
  const first = $("ev-player").querySelector("option[value='']");
  if (first) first.textContent = r.turn ? `(${r.turn}, whose turn it is)` : "(nobody named)";
  fillWhere();
}

function fillWhere() {
  const r = S.report || {};
  const kind = $("ev-kind").value;
  const where = $("ev-where");
  let choices = [];
  if (kind === "pull") choices = (r.legal_pulls || []).map((p) => [`${p.level}/${p.slot}`, `level ${p.level}, slot ${p.slot}: ${p.block}`]);
  if (kind === "place") choices = (r.place_options || []).map(([lv, sl]) => [`${lv}/${sl}`, `level ${lv}, slot ${sl}`]);
  const positional = kind === "pull" || kind === "place";
  $("ev-where-box").hidden = !positional;
  $("ev-player-box").hidden = kind === "collapse";
  if (positional) {
    const keep = where.value;
    where.replaceChildren(...choices.concat([[WHERE_OTHER, kind === "pull" ? "another block (a foul?)…" : "somewhere else…"]])
      .map(([v, t]) => Object.assign(document.createElement("option"), {value: v, textContent: t})));
    // keep the table's own pick; "other" only if the table chose it (not because nothing else was offered)
    if ([...where.options].some((o) => o.value === keep) && (keep !== WHERE_OTHER || S.otherChosen)) where.value = keep;
  }
  const other = positional && where.value === WHERE_OTHER;
  $("ev-level-box").hidden = !other;
  $("ev-slot-box").hidden = !other;
}

function eventFromForm() {
  const kind = $("ev-kind").value;
  const event = {event: kind};
  if (kind === "pull" || kind === "place") {
    const w = $("ev-where").value;
    const [lv, sl] = w === WHERE_OTHER ? [$("ev-level").value, $("ev-slot").value] : w.split("/");
    if (lv === "" || sl === "" || lv === undefined || sl === undefined) return null;
    event.level = Number(lv); event.slot = Number(sl);
  }
  const player = $("ev-player").value;
  if (kind !== "collapse" && player) event.player = player;
  if ((kind === "two_hands" || kind === "touch") && !event.player) event.player = (S.report || {}).turn || "";
  return event;
}

async function post(url, body, retried) {
  let res, data = {};
  try {
    res = await fetch(url, {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "X-CSRFToken": S.csrf || ""}, body: JSON.stringify(body)});
    data = await res.json();
  } catch (e) {
    toast("the referee did not answer; try again", false);
    return {res: res || {ok: false, status: 0}, data};
  }
  if (res.status === 400 && data.csrf && !retried) {  // token from before a restart: fetch a new one, once
    await refreshSession();
    return post(url, body, true);
  }
  if (!res.ok) {
    toast(data.error || "refused", false);
    if (res.status === 403 && url === "/api/actions") await refreshSession();
  }
  return {res, data};
}

async function refreshSession() {
  try {
    const res = await fetch("/api/session", {credentials: "same-origin"});
    const data = await res.json();
    S.csrf = data.csrf_token;
    S.table = !!data.table;
  } catch (e) { /* offline: keep what we had */ }
  document.body.classList.toggle("is-table", S.table);
  $("unlock").hidden = S.table;
  $("lock").hidden = !S.table;
}

async function act(body, done) {
  const {res} = await post("/api/actions", body);
  if (res.ok) toast(done, true);
}

function wire() {
  $("unlock").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const {res} = await post("/api/unlock", {pin: $("pin").value});
    $("pin").value = "";
    if (res.ok) toast("controls unlocked", true);
    await refreshSession();
  });
  $("lock").addEventListener("click", async () => { await post("/api/lock", {}); await refreshSession(); });
  for (const b of document.querySelectorAll(".color-btn")) {
    b.addEventListener("click", () => {
      const r = S.report || {};
      const kind = r.waiting_for === "penalty_color" ? "penalty_color" : "wild_color";
      const body = {action: kind, color: b.dataset.color};
      if (r.turn) body.player = r.turn;
      act(body, `${b.dataset.color} sent`);
    });
  }
  $("uno").addEventListener("click", () => act({action: "uno", caller: $("uno-caller").value, offender: $("uno-offender").value}, "Uno! sent"));
  $("no-match").addEventListener("click", () => act({action: "claim_no_match", player: (S.report || {}).turn || ""}, "no match sent"));
  $("undo").addEventListener("click", () => act({action: "undo"}, "undo sent"));
  $("cal-done").addEventListener("click", async () => {
    const ins = ((S.report || {}).calibration || {}).instruction;
    if (!ins) return;
    $("cal-done").disabled = true;
    const {res} = await post("/api/actions", {action: "calibration_next", step: ins.key});
    if (res.ok) toast("done: the referee goes on", true);
    else $("cal-done").disabled = false;
  });
  $("ev-kind").addEventListener("change", fillWhere);
  $("ev-where").addEventListener("change", () => { S.otherChosen = $("ev-where").value === WHERE_OTHER; fillWhere(); });
  $("event-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const event = eventFromForm();
    if (!event) { toast("say where: a level and a slot (0, 1 or 2)", false); return; }
    S.otherChosen = false;
    act({action: "event", event}, `${event.event.replace("_", " ")} sent`);
  });
  $("setup-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const names = $("setup-names").value.split("\n").map((s) => s.trim()).filter(Boolean);
    act({action: "players", players: names}, "players sent");
  });
}

wire();
refreshSession().then(connect);
