# plots/calibration.gp: the calibration's fits (memstub calibrate --plot):
# the measured samples of each calibration function beside the model fitted
# to them (Trapp, Meyer & Facchi 2011, eq. 5-8, and docs/calibration.md).
# Needs gnuplot 5.2 or later.
#
# memstub calibrate runs it as
#   gnuplot -c calibration.gp DIR OUTPUT FORMAT
# DIR     a directory holding
#           vars.gp    title, one label per panel (the fitted figures), and the
#                      models' coefficients (ns; bytes for the stack):
#                      hu_a hu_b mu_a mu_b su_a su_b sr_a sr_b ha0 ha1 sa0 sa1 so sf,
#                      and the cold fits: cold (1 when measured), cold_title,
#                      cold_heap_mmap_use, cold_stack_use, cmu_a cmu_b csu_a csu_b
#           sN.dat     "x value model" lines, N = the series
#                        0 heap use (arena): faults -> ns     1 heap use (mmapped)
#                        2 heap alloc: faults -> ns           3 stack use: faults -> ns
#                        4 stack use, cached stack            5 stack alloc: faults -> ns
#                        6 stack: open frames -> measured - pushed bytes
#                        7 usleep: delay (ns) -> overshoot (ns)
#                        8 heap use (mmapped), cold          9 stack use, first touch, cold
#           basic.dat  "repetition ns": time_basic per repetition
# OUTPUT  the file to write
# FORMAT  png, svg or pdf

if (ARGC < 3) {
  print 'usage: gnuplot -c calibration.gp DIR OUTPUT FORMAT'
  exit status 2
}
dir = ARG1
load dir.'/vars.gp'
fmt = ARG3
w = 1500
h = 1250
set encoding utf8
if (fmt eq 'png') {
  if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size w,h enhanced font 'sans,9'
  } else {
    set terminal png size w,h
  }
}
if (fmt eq 'svg') {
  set terminal svg size w,h enhanced font 'sans,9' background '#ffffff'
}
if (fmt eq 'pdf') {
  set terminal pdfcairo size (w/100.0),(h/100.0) enhanced font 'sans,6'
}
if (fmt ne 'png' && fmt ne 'svg' && fmt ne 'pdf') {
  print 'calibration.gp: unknown format ', fmt, ' (png, svg or pdf)'
  exit status 2
}
set output ARG2

# Samples: small grey points; models: a thick line of their own colour.
set style line 1 lc rgb '#808080' pt 7 ps 0.35
set style line 2 lc rgb '#D55E00' lw 2.5
set style line 3 lc rgb '#0072B2' pt 7 ps 0.35
set style line 4 lc rgb '#009E73' lw 2.5
set style line 5 lc rgb '#CC79A7' pt 7 ps 0.35
set style line 6 lc rgb '#CC79A7' lw 2.5 dt 2
set grid lc rgb '#d0d0d0' lw 0.5
# Each panel's key below it, outside its axes: never over a point.
set key outside below left Left reverse vertical noenhanced samplen 3
set format y '%.0f'
# Log time axes in units for people: a tic per power of ten, "1 µs" for 1000.
set ytics ('1 ns' 1, '10 ns' 10, '100 ns' 100, '1 µs' 1e3, '10 µs' 1e4, '100 µs' 1e5, \
           '1 ms' 1e6, '10 ms' 1e7, '100 ms' 1e8, '1 s' 1e9, '10 s' 1e10)

set multiplot layout 2,3 title title noenhanced font ',11'
set samples 400
lin(a, b, x) = (a + b * x) > 1 ? a + b * x : 1
lvl(a0, a1, x) = x < 0.5 ? a0 : a1

# Room below each row for its keys: the same in a row, so its panels align
# (tic labels, x label, then a line per entry).
set bmargin (cold ? 10 : 8)

# 1. Heap use against faults (eq. 6): arena and mmapped blocks.
set title 'heap use (eq. 6)' noenhanced
set xlabel 'page faults in the use phase'
set ylabel 'time'
set logscale y
set yrange [9.9:*]   # 10 ns at the bottom, its tic kept
set xrange [0:*]
if (cold) {
  plot dir.'/s0.dat' using 1:2 with points ls 1 title 'arena, measured', \
       lin(hu_a, hu_b, x) with lines ls 2 title heap_use, \
       dir.'/s1.dat' using 1:2 with points ls 3 title 'mmapped, measured', \
       lin(mu_a, mu_b, x) with lines ls 4 title heap_mmap_use, \
       dir.'/s8.dat' using 1:2 with points ls 5 title 'mmapped, '.cold_title, \
       lin(cmu_a, cmu_b, x) with lines ls 6 title cold_heap_mmap_use
} else {
  plot dir.'/s0.dat' using 1:2 with points ls 1 title 'arena, measured', \
       lin(hu_a, hu_b, x) with lines ls 2 title heap_use, \
       dir.'/s1.dat' using 1:2 with points ls 3 title 'mmapped, measured', \
       lin(mu_a, mu_b, x) with lines ls 4 title heap_mmap_use
}

# 2. Heap allocation (eq. 5): two levels.
set title 'heap allocation, realloc (eq. 5)'
set xlabel 'page faults of the heap part'
plot dir.'/s2.dat' using 1:2 with points ls 1 title 'measured', \
     lvl(ha0, ha1, x) with lines ls 2 title heap_alloc

# 3. Stack use against faults (eq. 8): first touch and a cached stack.
set title 'stack use (eq. 8)'
set xlabel 'page faults in the use phase'
if (cold) {
  plot dir.'/s3.dat' using 1:2 with points ls 1 title 'first touch, measured', \
       lin(su_a, su_b, x) with lines ls 2 title stack_use, \
       dir.'/s4.dat' using 1:2 with points ls 3 title 'cached stack, measured', \
       lin(sr_a, sr_b, x) with lines ls 4 title stack_retouch, \
       dir.'/s9.dat' using 1:2 with points ls 5 title 'first touch, '.cold_title, \
       lin(csu_a, csu_b, x) with lines ls 6 title cold_stack_use
} else {
  plot dir.'/s3.dat' using 1:2 with points ls 1 title 'first touch, measured', \
       lin(su_a, su_b, x) with lines ls 2 title stack_use, \
       dir.'/s4.dat' using 1:2 with points ls 3 title 'cached stack, measured', \
       lin(sr_a, sr_b, x) with lines ls 4 title stack_retouch
}

# 4. Stack allocation (eq. 7): two levels.
set bmargin 6
set title 'stack allocation, alloca (eq. 7)'
set xlabel 'page faults of the stack part'
plot dir.'/s5.dat' using 1:2 with points ls 1 title 'measured', \
     lvl(sa0, sa1, x) with lines ls 2 title stack_alloc

# 5. Stack bytes against open frames.
unset logscale y
set yrange [*:*]
set ytics autofreq
set title 'stack overhead'
set xlabel 'open frames'
set ylabel 'measured - pushed (bytes)'
plot dir.'/s6.dat' using 1:2 with points ls 1 title 'measured', \
     so + sf * x with lines ls 2 title stack_bytes

# 6. time_basic per repetition.
set title 'time per point (time\_basic)' enhanced
set xlabel 'repetition'
set xrange [*:*]
set ylabel 'time (ns)'
set format y '%.1f'
plot dir.'/basic.dat' using 1:2 with linespoints ls 3 title 'measured', \
     basic_ns with lines ls 2 title basic

unset multiplot
unset output
