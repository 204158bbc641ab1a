/**
 * A sweep as one self-contained HTML page (inline SVG, no script, nothing fetched): three
 * panels, output tokens/s, TTFT p50 and ITL p50 against concurrency, one line per measured
 * variant. Each point is a solid disc in its variant's colour; lines and the legend use a
 * lighter tint of it, so the discs are the only pixels of that exact colour (what the browser
 * test counts). Variants are dodged sideways at each concurrency so equal figures never hide
 * one another's points.
 */
import type * as Bench from "@mlops/serve/Bench"
import type * as Sweep from "@mlops/serve/Sweep"

/** Point colours, in variant order (a seventh variant reuses the first). */
export const palette: ReadonlyArray<string> = [
  "#d62728",
  "#1f77b4",
  "#2ca02c",
  "#9467bd",
  "#ff7f0e",
  "#8c564b"
]

/** The panels, in order: a title and the figure each shows. */
export const panels: ReadonlyArray<{
  readonly title: string
  readonly of: (l: Bench.LevelResult) => number | undefined
}> = [
  { title: "output tokens/s", of: (l) => l.outputTokensPerS },
  { title: "TTFT p50 (ms)", of: (l) => l.ttftMs.p50 },
  { title: "ITL p50 (ms)", of: (l) => l.itlMs.p50 }
]

const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** A colour halfway to white (the lines' and legend's tint). */
const tint = (hex: string) => {
  const n = Number.parseInt(hex.slice(1), 16)
  const mix = (c: number) => Math.round(c + (255 - c) * 0.5)
  const [r, g, b] = [mix((n >> 16) & 255), mix((n >> 8) & 255), mix(n & 255)]
  return `rgb(${r},${g},${b})`
}

const niceMax = (value: number) => {
  if (!(value > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power
  return 10 * power
}

const W = 360
const H = 260
const M = { left: 56, right: 16, top: 30, bottom: 40 }

const panel = (
  index: number,
  title: string,
  concurrency: ReadonlyArray<number>,
  series: ReadonlyArray<{ readonly color: string; readonly values: ReadonlyArray<number | undefined> }>
): string => {
  const pad = 28
  // side by side around the concurrency's tick, 14 px apart (discs 12 px wide), closer and
  // smaller when many variants share the space between two ticks
  const gap =
    concurrency.length === 1
      ? W - M.left - M.right - 2 * pad
      : (W - M.left - M.right - 2 * pad) / (concurrency.length - 1)
  const spacing = Math.min(14, gap / (series.length + 1))
  const radius = Math.max(2, Math.min(6, spacing / 2 - 1))
  const dodge = (k: number) => (k - (series.length - 1) / 2) * spacing
  const x0 = index * (W + 20)
  const plotW = W - M.left - M.right
  const plotH = H - M.top - M.bottom
  const max = niceMax(
    Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== undefined)))
  )
  // concurrencies evenly spaced (they usually double)
  const xAt = (i: number) =>
    x0 +
    M.left +
    (concurrency.length === 1 ? plotW / 2 : pad + (i * (plotW - 2 * pad)) / (concurrency.length - 1))
  const yAt = (v: number) => M.top + plotH - (v / max) * plotH
  const parts: Array<string> = [
    `<text x="${x0 + W / 2}" y="18" text-anchor="middle" font-size="14" fill="#222">${escapeHtml(title)}</text>`,
    `<rect x="${x0 + M.left}" y="${M.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#bbb"/>`
  ]
  for (const f of [0, 0.5, 1])
    parts.push(
      `<text x="${x0 + M.left - 6}" y="${yAt(max * f) + 4}" text-anchor="end" font-size="11" fill="#555">${Number((max * f).toPrecision(3))}</text>`
    )
  concurrency.forEach((c, i) => {
    parts.push(
      `<text x="${xAt(i)}" y="${H - M.bottom + 16}" text-anchor="middle" font-size="11" fill="#555">${c}</text>`
    )
  })
  parts.push(
    `<text x="${x0 + M.left + plotW / 2}" y="${H - 6}" text-anchor="middle" font-size="11" fill="#555">concurrency</text>`
  )
  const placed = series.map((s, k) => ({
    color: s.color,
    points: s.values.flatMap((v, i) => (v === undefined ? [] : [[xAt(i) + dodge(k), yAt(v)] as const]))
  }))
  // every line before any disc: no line crosses a disc
  for (const { color, points } of placed)
    if (points.length > 1)
      parts.push(
        `<polyline fill="none" stroke="${tint(color)}" stroke-width="2" points="${points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ")}"/>`
      )
  for (const { color, points } of placed)
    for (const [x, y] of points)
      parts.push(
        `<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="${radius.toFixed(1)}" fill="${color}"/>`
      )
  return parts.join("\n")
}

/** The page. */
export const html = (sweep: Sweep.SweepResult): string => {
  const measured = sweep.outcomes.filter(
    (o): o is Extract<Sweep.VariantOutcome, { _tag: "Measured" }> => o._tag === "Measured"
  )
  const series = measured.map((o, i) => ({
    label: o.variant.label,
    color: palette[i % palette.length]!,
    levels: o.result.levels
  }))
  const svgPanels = panels.map((p, index) =>
    panel(
      index,
      p.title,
      sweep.concurrency,
      series.map((s) => ({
        color: s.color,
        values: sweep.concurrency.map((c) => {
          const level = s.levels.find((l) => l.concurrency === c)
          return level === undefined || level.completed === 0 ? undefined : p.of(level)
        })
      }))
    )
  )
  const width = panels.length * (W + 20)
  // the legend wraps: as many 200 px entries a row as the width holds
  const perRow = Math.max(1, Math.floor(width / 200))
  const rows = Math.max(1, Math.ceil(series.length / perRow))
  const legend = series
    .map(
      (s, i) =>
        `<g transform="translate(${16 + (i % perRow) * 200},${H + 20 + Math.floor(i / perRow) * 22})"><line x1="0" y1="0" x2="24" y2="0" stroke="${tint(s.color)}" stroke-width="4"/><text x="32" y="4" font-size="13" fill="#222">${escapeHtml(s.label)}</text></g>`
    )
    .join("\n")
  const unmeasured = sweep.outcomes.flatMap((o) =>
    o._tag === "Measured"
      ? o.result.levels
          .filter((l) => l.completed === 0)
          .map(
            (l) =>
              `<li><b>${escapeHtml(o.variant.label)}</b> at concurrency ${l.concurrency}: every request failed (no point): ${escapeHtml(l.firstError ?? "")}</li>`
          )
      : [
          `<li><b>${escapeHtml(o.variant.label)}</b>: ${o._tag === "Refused" ? "refused before launch" : `failed during its ${o.stage}`}: ${escapeHtml(o.reason.split("\n")[0] ?? "")}</li>`
        ]
  )
  const others = [
    ...unmeasured,
    ...(sweep.aborted === undefined
      ? []
      : [`<li><b>${escapeHtml(sweep.aborted.name)}</b> could not be stopped: the sweep ended there</li>`])
  ].join("\n")
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mlops sweep ${escapeHtml(sweep.name)} on ${escapeHtml(sweep.host)}</title>
<style>body{font-family:sans-serif;margin:16px;color:#222;background:#fff}</style></head>
<body>
<h1 style="font-size:18px">sweep ${escapeHtml(sweep.name)} on ${escapeHtml(sweep.host)} <span style="color:#666;font-weight:normal">${escapeHtml(sweep.startedAt)}</span></h1>
<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${H + 18 + rows * 22}" viewBox="0 0 ${width} ${H + 18 + rows * 22}">
${svgPanels.join("\n")}
${legend}
</svg>
${others === "" ? "" : `<ul style="font-size:13px">${others}</ul>`}
</body></html>
`
}
