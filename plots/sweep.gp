# plots/sweep.gp: a what-if sweep's figures (memstub sweep, docs/sweep.md),
# each against one of its scales: the median of every point's runs, with
# bars from the least to the largest run, one line per combination of the
# other scales the sweep varied. One gnuplot draws them all (its start-up
# is most of a plot's cost). Needs gnuplot 5.
#
# memstub sweep runs it as
#   gnuplot -c sweep.gp DIR OUTPUT FORMAT
# DIR     a directory holding
#           vars.gp   nplots
#           vN.gp     plot N (from 1): title, xlabel, ylabel, nblocks, and
#                     out, the file it goes to (the last one goes to OUTPUT)
#           pN.dat    plot N's lines: one block each (two blank lines
#                     between blocks), a header line "LABEL median min max",
#                     then "scale median min max" rows by scale
# OUTPUT  the file the last plot is written to
# FORMAT  png or svg

if (ARGC < 3) {
  print 'usage: gnuplot -c sweep.gp DIR OUTPUT FORMAT'
  exit status 2
}
dir = ARG1
last = ARG2
load dir.'/vars.gp'
fmt = ARG3
set encoding utf8
if (fmt eq 'png') {
  if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 800,500 enhanced font 'sans,10'
  } else {
    set terminal png size 800,500
  }
}
if (fmt eq 'svg') {
  set terminal svg size 800,500 enhanced font 'sans,10' background '#ffffff'
}
if (fmt ne 'png' && fmt ne 'svg') {
  print 'sweep.gp: unknown format ', fmt, ' (png or svg)'
  exit status 2
}
set key outside right top noenhanced
set grid
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set yrange [0:*]
do for [i=1:nplots] {
  load sprintf('%s/v%d.gp', dir, i)
  if (i == nplots) { set output last } else { set output out }
  set title title noenhanced
  set xlabel xlabel noenhanced
  set ylabel ylabel noenhanced
  data = sprintf('%s/p%d.dat', dir, i)
  plot for [b=0:nblocks-1] data index b using 1:2:3:4 with yerrorlines lw 2 pt 7 title columnheader(1)
}
set output
