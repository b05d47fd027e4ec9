// Drawing blocks and the tower, shared by the live table and the round stepper.
"use strict";
const GLYPHS = {draw2: "+2", reverse: "⇄", skip: "⊘"};

function parseBlock(name) {
  if (!name) return null;
  if (name === "wild") return {color: "wild", glyph: "W", name};
  const [color, rest] = name.split("-");
  return {color, glyph: GLYPHS[rest] || rest, name};
}

function blockEl(name, extra) {
  const b = parseBlock(name);
  const el = document.createElement("span");
  el.className = "block " + (b ? "swatch-" + b.color : "empty") + (extra ? " " + extra : "");
  el.textContent = b ? b.glyph : "";
  if (b) el.title = name;
  return el;
}

// levels: bottom first, each [name|null x3]. Draws top level first; odd levels lie along x, even along y.
function renderTower(container, levels, info) {
  container.replaceChildren();
  const top = levels.length;
  let remaining = 0;
  for (let i = top - 1; i >= 0; i--) {
    const row = document.createElement("div");
    row.className = "level " + ((i + 1) % 2 ? "along-x" : "along-y") + (i === top - 1 ? " top" : "");
    row.dataset.level = i + 1;
    const num = document.createElement("span");
    num.className = "level-no";
    num.textContent = i + 1;
    row.appendChild(num);
    for (const name of levels[i]) {
      if (name) remaining++;
      row.appendChild(blockEl(name));
    }
    container.appendChild(row);
  }
  if (info) info.textContent = top ? `${remaining} blocks · top level ${top}` : "no tower yet";
}

function renderHand(el, hand) {
  el.replaceChildren();
  if (!hand) return;
  el.append("in hand: ", blockEl(hand));
}
