# plots/figure3.gp: original against replayed memory behaviour, the paper's
# Figure 3 (Trapp, Meyer & Facchi 2011): stack and heap in use over time,
# the original trace against each measured replay; when a trace has them, a
# third panel of resident (rss_bytes) and mapped (mapped_bytes) memory; when
# a trace has the work columns (cpu_ns, calls_*, churn_bytes), a panel of the
# CPU time per interval (as a share of the interval) and the allocator calls
# per interval; and a panel of the per-point time error (replayed - original). Needs gnuplot 5.2
# or later.
#
# memstub plot runs it as
#   gnuplot -c figure3.gp DIR OUTPUT FORMAT WIDTH HEIGHT
# DIR     a directory holding
#           vars.gp     title, orig_label, nrepl, xmin, xmax (us), repl_label[1..nrepl];
#                       stack_div/stack_unit, heap_div/heap_unit, x_div/x_unit (the
#                       axes' units for people: values are divided by the div);
#                       stack_peak_x/_y/_text, heap_peak_x/_y/_text (the original's
#                       peaks, us and bytes, marked with their values);
#                       res_panel (1: draw the resident panel), orig_rss, orig_mapped,
#                       repl_rss[i], repl_mapped[i] (1 when that trace has the curve),
#                       res_div/res_unit, res_peak_x/_y/_text;
#                       work_panel (1: draw the work panel), orig_cpu, orig_calls,
#                       repl_cpu[i], repl_calls[i] (1 when that trace has them)
#           orig.dat    block 0 stack, block 1 heap: "time_us bytes" lines
#           replN.dat   the same for replay N, and block 2 the time error: "time_us error_us"
#           origres.dat, replNres.dat   block 0 rss, block 1 mapped: "time_us bytes"
#           origwork.dat, replNwork.dat block 0 the CPU time of the intervals in
#                       each bin of the time axis as a share of the bin: "time_us percent",
#                       block 1 their calls: "time_us calls_per_ms" (bins start at time_us)
#         (the curves are already reduced to a few points per pixel column)
# OUTPUT  the file to write
# FORMAT  png, svg, pdf, or txt (gnuplot's dumb terminal, for a terminal)
# WIDTH, HEIGHT  in pixels (pdf: 100 pixels to the inch; txt: characters)
#
# Readable in black and white: the original is a thick solid grey band drawn
# first, each replay a thin line on top with its own dash pattern (and
# colour), and each replay's time error has its own point type.

if (ARGC < 5) {
  print 'usage: gnuplot -c figure3.gp DIR OUTPUT FORMAT WIDTH HEIGHT'
  exit status 2
}
dir = ARG1
load dir.'/vars.gp'
w = int(ARG4)
h = int(ARG5)

set encoding utf8
fmt = ARG3
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
if (fmt eq 'txt') {
  set terminal dumb size w,h nofeed
}
if (fmt ne 'png' && fmt ne 'svg' && fmt ne 'pdf' && fmt ne 'txt') {
  print 'figure3.gp: unknown format ', fmt, ' (png, svg, pdf or txt)'
  exit status 2
}
set output ARG2

# Line styles: 1 the original; 2.. the replays, cycling through five.
set style line 1 lc rgb '#909090' lw 4 dt 1
set style line 2 lc rgb '#D55E00' lw 1.25 dt 2
set style line 3 lc rgb '#0072B2' lw 1.25 dt 4
set style line 4 lc rgb '#009E73' lw 1.25 dt 5
set style line 5 lc rgb '#CC79A7' lw 1.25 dt 3
set style line 6 lc rgb '#E69F00' lw 1.25 dt (12,4,2,4,2,4)
set style line 7 lc rgb '#c0c0c0' lw 4 dt (8,4)
rs(i) = 2 + (i - 1) % 5
pts = '2 6 4 8 12'
rpt(i) = int(word(pts, 1 + (i - 1) % 5))

set grid xtics ytics lc rgb '#c8c8c8' lw 0.5 dt 1
set xrange [xmin/x_div:xmax/x_div]
set format x '%g'
set format y '%g'
set mxtics
set key top right opaque box noenhanced samplen 4 spacing 1.2
# Text has no room for a rotated y label: the unit goes on every tic label.
txt = fmt eq 'txt'
set lmargin at screen (txt ? 0.15 : 0.11)
# Room on the right for the work panel's second axis.
set rmargin at screen (work_panel ? 0.92 : 0.97)

top = 0.92
bottom = 0.07
gap = 0.015
# Panel heights: stack, heap (and resident) ph each, the time error 0.7 ph.
npanel = 2 + (res_panel ? 1 : 0) + (work_panel ? 1 : 0)
ph = nrepl > 0 ? (top - bottom - npanel * gap) / (npanel + 0.7) \
               : (top - bottom - (npanel - 1) * gap) / npanel

set multiplot title title noenhanced font ',12'

# Stack.
set tmargin at screen top
set bmargin at screen top - ph
set format x ''
set ylabel 'stack in use ('.stack_unit.')'
if (txt) { set format y '%g '.stack_unit }
# A peak: a point on it and its value beside it, on the side with room.
# Text cannot right-justify, so a label left of its point starts its length
# further left there.
right(px) = px > (xmin + 0.6 * (xmax - xmin)) / x_div
mark(px, py, t) = sprintf("set label 1 %s at first %.6g,%.6g %s point pt 7 ps 1 offset %s,0.6 noenhanced front", \
    '"'.t.'"', px, py, right(px) && !txt ? 'right' : 'left', \
    !right(px) ? '1' : txt ? sprintf('%d', -(strlen(t) + 1)) : '-1')
eval mark(stack_peak_x / x_div, stack_peak_y / stack_div, stack_peak_text)
set offsets 0, 0, graph 0.12, 0
plot dir.'/orig.dat' index 0 using ($1/x_div):($2/stack_div) with steps ls 1 title orig_label, \
     for [i=1:nrepl] sprintf('%s/repl%d.dat', dir, i) index 0 using ($1/x_div):($2/stack_div) \
         with steps ls rs(i) title repl_label[i]

# Heap.
unset key
set tmargin at screen top - ph - gap
set bmargin at screen top - 2 * ph - gap
if (nrepl == 0 && !res_panel && !work_panel) {
  set format x '%g'
  set xlabel 'time ('.x_unit.')'
}
set ylabel 'heap in use ('.heap_unit.')'
if (txt) { set format y '%g '.heap_unit }
eval mark(heap_peak_x / x_div, heap_peak_y / heap_div, heap_peak_text)
plot dir.'/orig.dat' index 1 using ($1/x_div):($2/heap_div) with steps ls 1 title orig_label, \
     for [i=1:nrepl] sprintf('%s/repl%d.dat', dir, i) index 1 using ($1/x_div):($2/heap_div) \
         with steps ls rs(i) title repl_label[i]

# Resident and mapped memory: the original's rss a thick grey band, its
# mapped a thick light dashed one; each replay's rss in its style, its mapped
# the same colour dotted and thinner. Only the curves a trace has.
if (res_panel) {
  set key top right opaque box noenhanced samplen 4 spacing 1.2
  set tmargin at screen top - 2 * ph - 2 * gap
  set bmargin at screen top - 3 * ph - 2 * gap
  if (nrepl == 0 && !work_panel) {
    set format x '%g'
    set xlabel 'time ('.x_unit.')'
  }
  set ylabel 'resident, mapped ('.res_unit.')'
  if (txt) { set format y '%g '.res_unit }
  eval mark(res_peak_x / x_div, res_peak_y / res_div, res_peak_text)
  cmd = 'plot '
  sep = ''
  if (orig_rss) { cmd = cmd.sep."dir.'/origres.dat' index 0 using ($1/x_div):($2/res_div) with steps ls 1 title orig_label.' rss'"; sep = ', ' }
  if (orig_mapped) { cmd = cmd.sep."dir.'/origres.dat' index 1 using ($1/x_div):($2/res_div) with steps ls 7 title orig_label.' mapped'"; sep = ', ' }
  do for [i=1:nrepl] {
    if (repl_rss[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dres.dat' index 0 using ($1/x_div):($2/res_div) with steps ls rs(%d) title repl_label[%d].' rss'", i, i, i); sep = ', ' }
    if (repl_mapped[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dres.dat' index 1 using ($1/x_div):($2/res_div) with steps ls rs(%d) dt 3 lw 0.8 title repl_label[%d].' mapped'", i, i, i); sep = ', ' }
  }
  eval cmd
  unset key
}
unset label 1
set offsets 0, 0, 0, 0

# The work per interval, over bins of two pixel columns: CPU time as a share
# of the time (left axis: the original a thick grey band, each replay in its
# style) and the allocator calls per ms (right axis: the original light grey
# dashed, each replay dotted).
if (work_panel) {
  k = 2 + (res_panel ? 1 : 0)
  set key top right opaque box noenhanced samplen 4 spacing 1.2
  set tmargin at screen top - k * ph - k * gap
  set bmargin at screen top - (k + 1) * ph - k * gap
  if (nrepl == 0) {
    set format x '%g'
    set xlabel 'time ('.x_unit.')'
  }
  set ylabel 'CPU (% of the time)'
  if (txt) { set format y '%g %%' }
  set yrange [0:*]
  set y2label 'allocator calls per ms'
  set y2tics
  set y2range [0:*]
  set format y2 '%g'
  cmd = 'plot '
  sep = ''
  if (orig_cpu) { cmd = cmd.sep."dir.'/origwork.dat' index 0 using ($1/x_div):2 with steps ls 1 title orig_label.' CPU'"; sep = ', ' }
  if (orig_calls) { cmd = cmd.sep."dir.'/origwork.dat' index 1 using ($1/x_div):2 axes x1y2 with steps ls 7 title orig_label.' calls'"; sep = ', ' }
  do for [i=1:nrepl] {
    if (repl_cpu[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dwork.dat' index 0 using ($1/x_div):2 with steps ls rs(%d) title repl_label[%d].' CPU'", i, i, i); sep = ', ' }
    if (repl_calls[i]) { cmd = cmd.sep.sprintf("dir.'/repl%dwork.dat' index 1 using ($1/x_div):2 axes x1y2 with steps ls rs(%d) dt 3 lw 0.8 title repl_label[%d].' calls'", i, i, i); sep = ', ' }
  }
  eval cmd
  unset key
  unset y2tics
  unset y2label
  set yrange [*:*]
}

# Time error per point.
if (nrepl > 0) {
  set key top left opaque box noenhanced
  set tmargin at screen top - npanel * ph - npanel * gap
  set bmargin at screen bottom
  set format x '%g'
  set xlabel 'time ('.x_unit.')'
  set ylabel 'time error (µs)'
  if (txt) { set format y '%g µs' }
  set xzeroaxis lt -1 lw 1 dt 1
  plot for [i=1:nrepl] sprintf('%s/repl%d.dat', dir, i) index 2 using ($1/x_div):2 \
           with points ls rs(i) pt rpt(i) ps 0.7 title repl_label[i]
}

unset multiplot
unset output
