# plots/sweep.gp: one figure of a what-if sweep (memstub sweep, docs/sweep.md)
# against one of its scales: the median of every point's runs, with bars from
# the least to the largest run, one line per combination of the other scales
# the sweep varied. Needs gnuplot 5.
#
# memstub sweep runs it as
#   gnuplot -c sweep.gp DIR OUTPUT FORMAT
# DIR     a directory holding
#           vars.gp   title, xlabel, ylabel, nblocks
#           sweep.dat one block per line drawn (two blank lines between
#                     blocks), each a header line "LABEL median min max",
#                     then "scale median min max" rows by scale
# OUTPUT  the file to write
# FORMAT  png or svg

if (ARGC < 3) {
  print 'usage: gnuplot -c sweep.gp DIR OUTPUT FORMAT'
  exit status 2
}
dir = ARG1
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
set output ARG2
set title title noenhanced
set xlabel xlabel noenhanced
set ylabel ylabel noenhanced
set key outside right top noenhanced
set grid
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05
set yrange [0:*]
plot for [i=0:nblocks-1] dir.'/sweep.dat' index i using 1:2:3:4 with yerrorlines lw 2 pt 7 title columnheader(1)
