# plots/figure3.gp: original against replayed memory behaviour, the paper's
# Figure 3 (Trapp, Meyer & Facchi 2011): stack and heap in use over time,
# the original trace against each measured replay; when a trace has them, a
# panel of resident (rss_bytes) and mapped (mapped_bytes) memory; when a
# trace has the work columns (cpu_ns, calls_*, churn_bytes), a panel of the
# CPU time per interval (as a share of the interval) and the allocator calls
# per interval; and a panel of the per-point time error (replayed -
# original). Needs gnuplot 5.2 or later.
#
# memstub plot runs it as
#   gnuplot -c figure3.gp DIR OUTPUT FORMAT WIDTH HEIGHT
# DIR     a directory holding
#           vars.gp     written by plots/vars.c:
#                       title (its lines joined by "\n"), title_lines, orig_label,
#                       nrepl, repl_label[1..nrepl];
#                       the curves each trace has: orig_stack, orig_heap, orig_rss,
#                       orig_mapped, orig_cpu, orig_calls and repl_*[i] alike,
#                       repl_err[i] (1 when replay i has time errors);
#                       the panels drawn: stack_panel, heap_panel, res_panel,
#                       work_panel, err_panel;
#                       each axis' unit and tics, NAME_div (values are divided
#                       by it), NAME_unit, NAME_step, NAME_fmt and NAME_ufmt (the
#                       tic labels, plain and with the unit)
#                       for x (xmin, xmax in its unit), stack, heap, res, cpu,
#                       calls and err; NAME_max, a memory panel's largest value;
#                       err_lo, err_hi, the time errors' range; cpu_top,
#                       calls_top, the work panel's;
#                       each memory panel's peaks: NAME_npk (how many), and for
#                       all panels pk_panel[q] (1 stack, 2 heap, 3 res), pk_x[q], pk_y[q]
#                       (in the axes' units), pk_text[q], pk_trace[q] (0 the
#                       original, i replay i), q from 1 to npk;
#                       the legend: nleg, leg_text[k], leg_trace[k], leg_sec[k]
#                       (1: the trace's dotted curves, mapped memory and calls)
#           orig.dat    block 0 stack, block 1 heap: "time_us bytes" lines
#           replN.dat   the same for replay N, and block 2 the time error: "time_us error_us"
#           origres.dat, replNres.dat   block 0 rss, block 1 mapped: "time_us bytes"
#           origwork.dat, replNwork.dat block 0 the CPU time of the intervals in
#                       each bin of the time axis as a share of the bin: "time_us percent",
#                       block 1 their calls: "time_us calls_per_ms" (bins start at time_us)
#         (the curves are already reduced to a few points per pixel column)
# OUTPUT  the file to write
# FORMAT  png, svg, pdf, or txt (gnuplot's dumb terminal, for a terminal)
# WIDTH, HEIGHT  in pixels (pdf: 100 pixels to the inch; txt: characters; a
#         text figure grows taller when its panels need the lines)
#
# Nothing is drawn over a curve or over another text: the legend is one
# block below the panels, each memory panel keeps rows above its curves for
# the peaks' labels (one per trace), and the axes read in units chosen by
# their range (vars.gp). Readable in black and white: the original is a
# thick solid grey band drawn first, each replay a thin line on top with its
# own dash pattern (and colour), and each replay's time error has its own
# point type; as text, each curve its own character.

if (ARGC < 5) {
  print 'usage: gnuplot -c figure3.gp DIR OUTPUT FORMAT WIDTH HEIGHT'
  exit status 2
}
dir = ARG1
load dir.'/vars.gp'
w = int(ARG4)
h = int(ARG5)
fmt = ARG3
txt = fmt eq 'txt'

set encoding utf8
if (fmt eq 'png') {
  if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size w,h enhanced font 'sans,10' dashlength 1.5
  } else {
    set terminal png size w,h
  }
}
if (fmt eq 'svg') {
  set terminal svg size w,h enhanced font 'sans,10' dashlength 1.5 background '#ffffff'
}
if (fmt eq 'pdf') {
  set terminal pdfcairo size (w/100.0),(h/100.0) enhanced font 'sans,7' dashlength 1.5
}
if (fmt ne 'png' && fmt ne 'svg' && fmt ne 'pdf' && fmt ne 'txt') {
  print 'figure3.gp: unknown format ', fmt, ' (png, svg, pdf or txt)'
  exit status 2
}

# ---- layout, in characters ---------------------------------------------------
# A character's width and height as shares of the figure: a cell of the text
# figure, else what the terminal says after drawing nothing to nowhere.
if (txt) {
  hc = 1.0 / (w - 1)
} else {
  set output '/dev/null'
  unset border
  unset tics
  unset key
  plot [0:1][0:1] NaN notitle
  hc = 1.0 * GPVAL_TERM_HCHAR / GPVAL_TERM_XSIZE
  vc = 1.0 * GPVAL_TERM_VCHAR / GPVAL_TERM_YSIZE
  set border
  set tics
}
# The margins: on the left the tic labels and the (rotated) y label, on the
# right some room, or the work panel's calls and their label.
lm = txt ? 11.0 / w : 9 * hc + 2.4 * vc * h / w
rm = 1 - (work_panel ? (txt ? 8.0 / w : 7 * hc + 2.4 * vc * h / w) : 3 * hc)

# The legend: a column per trace (as many as fit the width, then another
# line of them), its curves' entry above its dotted curves' one; a column
# as wide as the longest text beside a sample. Text cuts a text too long for
# the width, with "...".
samp = 4
maxlen = 0
anysec = 0
do for [k=1:nleg] {
  maxlen = strlen(leg_text[k]) > maxlen ? strlen(leg_text[k]) : maxlen
  anysec = anysec || leg_sec[k]
}
room = int((1 - lm) / hc) - samp - 3
if (txt && maxlen > room) {
  do for [k=1:nleg] {
    if (strlen(leg_text[k]) > room) { leg_text[k] = leg_text[k][1:room - 3].'...' }
  }
  maxlen = room
}
colw = (maxlen + samp + 3) * hc
lcols = int((1 - lm) / colw)
lcols = lcols < 1 ? 1 : lcols > nrepl + 1 ? nrepl + 1 : lcols
# Rows: a line of traces takes one, and one more when a trace in it has
# dotted curves.
array leg_r[nleg > 0 ? nleg : 1]
lrows = 0
do for [line=0:int(nrepl / lcols)] {
  sec = 0
  do for [k=1:nleg] { sec = sec || (int(leg_trace[k] / lcols) == line && leg_sec[k]) }
  do for [k=1:nleg] { if (int(leg_trace[k] / lcols) == line) { leg_r[k] = lrows + leg_sec[k] } }
  lrows = lrows + 1 + sec
}
leg_col(k) = leg_trace[k] % lcols
leg_row(k) = leg_r[k]

# The peaks' labels: each beside its point's x where it fits, else moved
# in from the edge (text cuts a label wider than the panel), in the first
# row above the curves where it meets no other label of its panel.
scr(px) = lm + (px - xmin) / (xmax - xmin) * (rm - lm)
wide = int((rm - lm) / hc) - 3
fits(s) = !txt ? s : strlen(s) > wide - 2 ? ' '.s[1:wide - 5].'... ' : ' '.s.' '  # text: a space either side
# A label's left end, and whether it ends at the point's left (lr: graphics
# then place it by its right end, their widths being estimates).
lx(px, s) = scr(px) + hc + strlen(s) * hc <= rm - hc ? scr(px) + hc : \
            scr(px) - hc - strlen(s) * hc >= lm + hc ? scr(px) - hc - strlen(s) * hc : \
            (rm - hc - strlen(s) * hc > lm + hc ? rm - hc - strlen(s) * hc : lm + hc)
lr(px, s) = !txt && scr(px) + hc + strlen(s) * hc > rm - hc && scr(px) - hc - strlen(s) * hc >= lm + hc
lx0(q, t) = lr(pk_x[q], t) ? scr(pk_x[q]) - hc - strlen(t) * hc : lx(pk_x[q], t)
array pk_r[npk > 0 ? npk : 1]
array pk_a[npk > 0 ? npk : 1]
array pk_z[npk > 0 ? npk : 1]
array pk[5] = [0, 0, 0, 0, 0]
do for [q=1:npk] {
  t = fits(pk_text[q])
  pk_a[q] = lx0(q, t) - hc
  pk_z[q] = lx0(q, t) + (strlen(t) + 1) * hc
  pk_r[q] = 0
  do for [r=1:q] {
    if (pk_r[q] == 0) {
      clash = 0
      do for [j=1:q-1] {
        clash = clash || (pk_panel[j] == pk_panel[q] && pk_r[j] == r && pk_a[j] < pk_z[q] && pk_a[q] < pk_z[j])
      }
      if (!clash) { pk_r[q] = r }
    }
  }
  pk[pk_panel[q]] = pk[pk_panel[q]] > pk_r[q] ? pk[pk_panel[q]] : pk_r[q]
}

# The panels from the top: stack, heap, resident, work (each weight 1) and
# the time error (0.7); a memory panel needs its labels' rows above its
# curves (and one more in text, where rows are whole).
array pw[5] = [stack_panel, heap_panel, res_panel, work_panel, 0.7 * err_panel]
npanel = stack_panel + heap_panel + res_panel + work_panel + err_panel
spacing = txt ? 1 : 1.15
# Text: rows for the title, the x axis, the legend and each panel's least.
if (txt) {
  need = title_lines + 1 + 5 + lrows + (npanel - 1)
  do for [p=1:5] { need = need + (pw[p] > 0 ? 6 + pk[p] + (pk[p] > 0 ? 2 : 0) : 0) }
  h = h > need ? h : need
  set terminal dumb size w,h nofeed
  vc = 1.0 / (h - 1)
}
# Text: every place on a whole row.
snap(v) = txt ? floor(v / vc + 0.5) * vc : v
set output ARG2
top = snap(1 - (title_lines + (txt ? 0 : 1.6)) * vc * (txt ? 1 : 1.2))
legtop = snap(lrows * vc * spacing + (txt ? 1 : 0.8) * vc)

bottom = legtop + 3 * vc
gap = txt ? vc : 0.8 * vc
weights = 0
do for [p=1:5] { weights = weights + pw[p] }
unit = (top - bottom - (npanel - 1) * gap) / weights
array ptop[5]
array pbot[5]
y = top
last = 1
do for [p=1:5] {
  if (pw[p] > 0) {
    ptop[p] = snap(y)
    pbot[p] = snap(y - pw[p] * unit)
    y = pbot[p] - gap
    last = p
  }
}
# The last one ends where the time axis' labels start, whatever the rounding.
pbot[last] = bottom

# ---- styles ------------------------------------------------------------------
# 1 the original, 2.. the replays (cycling through five), 7 the original's
# dotted curves (mapped, calls); a replay's dotted curves are its style
# dotted and thinner. Text: one character per curve (lt), dots not drawn.
set style line 1 lc rgb '#909090' lw 4 dt 1
set style line 2 lc rgb '#D55E00' lw 1.25 dt 2
set style line 3 lc rgb '#0072B2' lw 1.25 dt 4
set style line 4 lc rgb '#009E73' lw 1.25 dt 5
set style line 5 lc rgb '#CC79A7' lw 1.25 dt 3
set style line 6 lc rgb '#E69F00' lw 1.25 dt (12,4,2,4,2,4)
set style line 7 lc rgb '#c0c0c0' lw 4 dt (8,4)
# Their dotted curves: 7 the original's, 10 + style the replays'.
do for [i=2:6] { set style line 10 + i lc rgb word('#D55E00 #0072B2 #009E73 #CC79A7 #E69F00', i - 1) lw 0.8 dt 3 }
if (txt) {
  do for [i=1:7] { set style line i lt i }
  do for [i=2:6] { set style line 10 + i lt 8 - i }
}
rs(i) = 2 + (i - 1) % 5
pts = '2 6 4 8 12'
rpt(i) = int(word(pts, 1 + (i - 1) % 5))
ink = '#505050 #D55E00 #0072B2 #009E73 #CC79A7 #E69F00'
# A trace's style (k: 0 the original, i replay i), its dotted curves' style
# and the colour of its labels.
tls(k) = k ? rs(k) : 1
dls(k) = k ? 10 + rs(k) : 7
tink(k) = word(ink, 1 + (k ? 1 + (k - 1) % 5 : 0))

set grid xtics ytics lc rgb '#c8c8c8' lw 0.5 dt 1
set xrange [xmin:xmax]
set xtics x_step
set mxtics
unset key
set lmargin at screen lm
set rmargin at screen rm
set multiplot title title noenhanced font ',12'

# ---- the panels ----------------------------------------------------------------
# A panel's place and its name: on its y label, the short name when the
# name is longer than the panel is high (a character is about 0.8 of the
# terminal's width estimate), or in text (no rotated labels) on
# its top border; the time axis' labels on the last one only. Where even
# the short name does not fit, and in text, each y tic label carries the
# unit (unit(p, short): 1).
tall(p, s) = strlen(s) * (txt ? 1 : 0.8) * hc * w <= 0.95 * (ptop[p] - pbot[p]) * h
unit(p, short) = txt || !tall(p, short)
panel(p, name, short) = sprintf("set tmargin at screen %.6f; set bmargin at screen %.6f; ", ptop[p], pbot[p]) . \
    (p == last ? sprintf("set format x '%s'; set xlabel 'time (%s)'; ", x_fmt, x_unit) \
               : "set format x ''; unset xlabel; ") . \
    (txt ? sprintf("set label 1 ' %s ' at graph 0, graph 1 left offset 1,0 front; unset ylabel; ", name) \
         : sprintf("set ylabel '%s'; ", tall(p, name) ? name : tall(p, short) ? short : ''))
# A memory panel's y axis: from 0 to its largest value, with pk[p] rows
# above for the peaks' labels (and one more in text, whose rows are whole).
# An image too small for them all keeps the rows that fit in 60 % of the
# panel and leaves the other labels out (their points stay); text is made
# tall enough.
panel_rows(p) = (ptop[p] - pbot[p]) / (vc * spacing)
pad = txt ? 1.5 : 0.6
rows(p) = txt || pk[p] + pad <= 0.6 * panel_rows(p) ? pk[p] : floor(0.6 * panel_rows(p) - pad)
room(p) = rows(p) > 0 ? (rows(p) + pad) / panel_rows(p) : 0
ytop(p, max) = (max > 0 ? max : 1) / (1 - room(p))
ly(p, j) = 1 - (j - (txt ? 0 : 0.3)) / panel_rows(p)
peaks = "do for [q=1:npk] { if (pk_panel[q] == p) { \
  k = pk_trace[q]; t = fits(pk_text[q]); \
  if (pk_r[q] > rows(p)) { t = '' } else { if (lr(pk_x[q], t)) { \
    set label 2 * q + 8 t at screen scr(pk_x[q]) - hc, graph ly(p, pk_r[q]) right tc rgb tink(k) noenhanced front \
  } else { \
    set label 2 * q + 8 t at screen lx(pk_x[q], t), graph ly(p, pk_r[q]) left tc rgb tink(k) noenhanced front } }; \
  if (txt) { set label 2 * q + 9 'o' at first pk_x[q], first pk_y[q] center front } \
  else { set label 2 * q + 9 '' at first pk_x[q], first pk_y[q] point pt 7 ps 0.9 lc rgb tink(k) front } } }"
# A memory panel's axis, by the name of its variables. Tics at least two
# rows apart in text, one and a half in pixels (the room above the curves
# and a short panel add tics): the step raised through 1, 2, 5 x 10^k.
nn(st) = (e = 10**floor(log10(st) + 1e-9), f = st / e, (f < 1.5 ? 2 : f < 3.5 ? 5 : 10) * e)
sparse(p, span, st) = span / st <= panel_rows(p) / (txt ? 2.0 : 1.5)
ystep(p, span, st) = sparse(p, span, st) ? st : sparse(p, span, nn(st)) ? nn(st) : \
                     sparse(p, span, nn(nn(st))) ? nn(nn(st)) : nn(nn(nn(st)))
yaxis(p, n, short) = sprintf("set yrange [0:%.10g]; set ytics %.10g; set format y %s_%sfmt; ", \
    ytop(p, value(n.'_max')), ystep(p, ytop(p, value(n.'_max')), value(n.'_step')), n, \
    unit(p, short) ? 'u' : '')

# Stack and heap: the original a thick grey band, each replay in its style.
do for [p=1:2] {
  n = p == 1 ? 'stack' : 'heap'
  if (pw[p] > 0) {
    short = n.' ('.value(n.'_unit').')'
    eval panel(p, n.' in use ('.value(n.'_unit').')', short) . yaxis(p, n, short)
    eval peaks
    cmd = 'plot '
    sep = ''
    if (p == 1 ? orig_stack : orig_heap) { cmd = cmd.sprintf("dir.'/orig.dat' index %d using ($1/x_div):($2/%s_div) with steps ls 1 notitle", p - 1, n); sep = ', ' }
    do for [i=1:nrepl] {
      if (p == 1 ? repl_stack[i] : repl_heap[i]) { cmd = cmd.sep.sprintf("dir.'/repl%d.dat' index %d using ($1/x_div):($2/%s_div) with steps ls %d notitle", i, p - 1, n, rs(i)); sep = ', ' }
    }
    eval cmd.(sep eq '' ? 'NaN notitle' : '')
    unset label
  }
}

# Resident and mapped memory: the original's rss a thick grey band, its
# mapped a thick light dashed one; each replay's rss in its style, its
# mapped the same dotted and thinner. Only the curves a trace has.
if (res_panel) {
  p = 3
  short = 'resident ('.res_unit.')'
  eval panel(p, 'resident, mapped ('.res_unit.')', short) . yaxis(p, 'res', short)
  eval peaks
  cmd = 'plot '
  sep = ''
  if (orig_rss) { cmd = cmd.sep."dir.'/origres.dat' index 0 using ($1/x_div):($2/res_div) with steps ls 1 notitle"; sep = ', ' }
  if (orig_mapped) { cmd = cmd.sep."dir.'/origres.dat' index 1 using ($1/x_div):($2/res_div) with steps ls 7 notitle"; sep = ', ' }
  do for [i=1:nrepl] {
    if (repl_rss[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dres.dat' index 0 using ($1/x_div):($2/res_div) with steps ls %d notitle", i, rs(i)); sep = ', ' }
    if (repl_mapped[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dres.dat' index 1 using ($1/x_div):($2/res_div) with steps ls %d notitle", i, dls(i)); sep = ', ' }
  }
  eval cmd
  unset label
}

# The work per interval, over bins of two pixel columns: CPU time as a share
# of the time (left axis: the original a thick grey band, each replay in its
# style) and the allocator calls per ms (right axis: the original light grey
# dashed, each replay dotted).
if (work_panel) {
  p = 4
  eval panel(p, 'CPU (% of the time)'.(txt ? ', calls per ms (right)' : ''), 'CPU (%)')
  set yrange [0:cpu_top]
  set ytics ystep(p, cpu_top, cpu_step) nomirror
  set format y (unit(p, 'CPU (%)') ? cpu_ufmt : cpu_fmt)
  set y2label (txt ? '' : tall(p, 'allocator calls per ms') ? 'allocator calls per ms' : tall(p, 'calls per ms') ? 'calls per ms' : '')
  set y2range [0:calls_top]
  set y2tics ystep(p, calls_top, calls_step)
  set format y2 calls_fmt
  cmd = 'plot '
  sep = ''
  if (orig_cpu) { cmd = cmd.sep."dir.'/origwork.dat' index 0 using ($1/x_div):2 with steps ls 1 notitle"; sep = ', ' }
  if (orig_calls) { cmd = cmd.sep."dir.'/origwork.dat' index 1 using ($1/x_div):2 axes x1y2 with steps ls 7 notitle"; sep = ', ' }
  do for [i=1:nrepl] {
    if (repl_cpu[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dwork.dat' index 0 using ($1/x_div):2 with steps ls %d notitle", i, rs(i)); sep = ', ' }
    if (repl_calls[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dwork.dat' index 1 using ($1/x_div):2 axes x1y2 with steps ls %d notitle", i, dls(i)); sep = ', ' }
  }
  eval cmd
  unset label
  unset y2tics
  unset y2label
  set ytics mirror
}

# Time error per point, in the unit of the largest.
if (err_panel) {
  p = 5
  eval panel(p, 'time error ('.err_unit.')', 'error ('.err_unit.')')
  set yrange [err_lo:err_hi]
  set ytics ystep(p, err_hi - err_lo, err_step)
  set format y (unit(p, 'error ('.err_unit.')') ? err_ufmt : err_fmt)
  set xzeroaxis lt -1 lw 1 dt 1
  cmd = 'plot '
  sep = ''
  do for [i=1:nrepl] {
    if (repl_err[i]) { cmd = cmd.sep.sprintf("dir.'/repl%d.dat' index 2 using ($1/x_div):($2/err_div) with points ls %d pt %d ps 0.7 notitle", i, rs(i), rpt(i)); sep = ', ' }
  }
  eval cmd
  unset label
  unset xzeroaxis
}

# ---- the legend ------------------------------------------------------------------
# Below the time axis, in its own rows: each entry a sample of the curve (a
# replay's with the point of its time errors) and its text.
if (nleg > 0) {
  unset border
  unset tics
  unset grid
  unset xlabel
  unset ylabel
  unset label
  set tmargin at screen legtop
  set bmargin at screen 0
  lp(k) = leg_trace[k] > 0 && !leg_sec[k] && repl_err[leg_trace[k]]
  # Text: the sample is the curve's character (lt 1-7: * # $ % @ & =) and
  # the point's letter (pt N: the Nth letter).
  pens = '*#$%@&='
  pen(ls) = (n = (ls > 10 ? 8 - (ls - 10) : ls), pens[n:n])
  letters = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
  sample(k, ls) = lp(k) ? pen(ls).pen(ls).letters[rpt(leg_trace[k]):rpt(leg_trace[k])].pen(ls) \
                        : pen(ls).pen(ls).pen(ls).pen(ls)
  do for [k=1:nleg] {
    ls = leg_sec[k] ? dls(leg_trace[k]) : tls(leg_trace[k])
    x = lm + leg_col(k) * colw
    y = legtop - (leg_row(k) + (txt ? 1 : 0.5)) * vc * spacing
    if (txt) {
      set label 2 * k + 1 sample(k, ls).' '.leg_text[k] at screen x, y left noenhanced front
    } else {
      set arrow k from screen x, y to screen x + samp * hc, y nohead ls ls front
      if (lp(k)) { set label 2 * k '' at screen x + samp * hc / 2, y point ls ls pt rpt(leg_trace[k]) ps 0.7 front }
      set label 2 * k + 1 leg_text[k] at screen x + (samp + 1) * hc, y left noenhanced front
    }
  }
  plot [0:1][0:1] NaN notitle
  unset arrow
}

unset multiplot
unset output
