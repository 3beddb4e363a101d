set terminal pngcairo size 1600,700 noenhanced font ',10'
set output 'docs/bench-peers-speedup.png'
set datafile missing '-'
set logscale x 2
set logscale y 2
set grid
set key outside right top font ',8'
set xlabel 'message size: fp32 logical input per rank (MiB)'
set multiplot layout 1,2 title 'qcoll speedup over the fastest peer of each row (peer time / qcoll time; >1: qcoll faster)'
set title 'reduce-scatter: vs the fastest peer'
set ylabel 'speedup'
plot 'docs/bench-peers-speedup.png.dat' index 12 using 1:2 with linespoints lc 1 pt 5 dt 1 title 'kg-e4m3 n=2', \
  'docs/bench-peers-speedup.png.dat' index 13 using 1:2 with linespoints lc 1 pt 7 dt 1 title 'kg-e4m3 n=4', \
  'docs/bench-peers-speedup.png.dat' index 14 using 1:2 with linespoints lc 2 pt 5 dt 1 title 'kg-e5m2 n=2', \
  'docs/bench-peers-speedup.png.dat' index 15 using 1:2 with linespoints lc 2 pt 7 dt 1 title 'kg-e5m2 n=4', \
  'docs/bench-peers-speedup.png.dat' index 16 using 1:2 with linespoints lc 3 pt 5 dt 1 title 'kg-hif8 n=2', \
  'docs/bench-peers-speedup.png.dat' index 17 using 1:2 with linespoints lc 3 pt 7 dt 1 title 'kg-hif8 n=4', \
  'docs/bench-peers-speedup.png.dat' index 18 using 1:2 with linespoints lc 4 pt 5 dt 1 title 'kg-int8 n=2', \
  'docs/bench-peers-speedup.png.dat' index 19 using 1:2 with linespoints lc 4 pt 7 dt 1 title 'kg-int8 n=4', \
  'docs/bench-peers-speedup.png.dat' index 20 using 1:2 with linespoints lc 5 pt 5 dt 1 title 'mx-e4m3 n=2', \
  'docs/bench-peers-speedup.png.dat' index 21 using 1:2 with linespoints lc 5 pt 7 dt 1 title 'mx-e4m3 n=4', \
  'docs/bench-peers-speedup.png.dat' index 22 using 1:2 with linespoints lc 6 pt 5 dt 1 title 'mx-e5m2 n=2', \
  'docs/bench-peers-speedup.png.dat' index 23 using 1:2 with linespoints lc 6 pt 7 dt 1 title 'mx-e5m2 n=4', 1 with lines lc 'black' dt 2 notitle
set title 'all-reduce: vs the fastest peer'
set ylabel 'speedup'
plot 'docs/bench-peers-speedup.png.dat' index 0 using 1:2 with linespoints lc 1 pt 5 dt 1 title 'kg-e4m3 n=2', \
  'docs/bench-peers-speedup.png.dat' index 1 using 1:2 with linespoints lc 1 pt 7 dt 1 title 'kg-e4m3 n=4', \
  'docs/bench-peers-speedup.png.dat' index 2 using 1:2 with linespoints lc 2 pt 5 dt 1 title 'kg-e5m2 n=2', \
  'docs/bench-peers-speedup.png.dat' index 3 using 1:2 with linespoints lc 2 pt 7 dt 1 title 'kg-e5m2 n=4', \
  'docs/bench-peers-speedup.png.dat' index 4 using 1:2 with linespoints lc 3 pt 5 dt 1 title 'kg-hif8 n=2', \
  'docs/bench-peers-speedup.png.dat' index 5 using 1:2 with linespoints lc 3 pt 7 dt 1 title 'kg-hif8 n=4', \
  'docs/bench-peers-speedup.png.dat' index 6 using 1:2 with linespoints lc 4 pt 5 dt 1 title 'kg-int8 n=2', \
  'docs/bench-peers-speedup.png.dat' index 7 using 1:2 with linespoints lc 4 pt 7 dt 1 title 'kg-int8 n=4', \
  'docs/bench-peers-speedup.png.dat' index 8 using 1:2 with linespoints lc 5 pt 5 dt 1 title 'mx-e4m3 n=2', \
  'docs/bench-peers-speedup.png.dat' index 9 using 1:2 with linespoints lc 5 pt 7 dt 1 title 'mx-e4m3 n=4', \
  'docs/bench-peers-speedup.png.dat' index 10 using 1:2 with linespoints lc 6 pt 5 dt 1 title 'mx-e5m2 n=2', \
  'docs/bench-peers-speedup.png.dat' index 11 using 1:2 with linespoints lc 6 pt 7 dt 1 title 'mx-e5m2 n=4', 1 with lines lc 'black' dt 2 notitle
unset multiplot
