#!/bin/sh
# docs/gallery/make.sh: make docs/gallery.md and the figures in docs/gallery/
# again, with the commands that made them (a minute: the demo, two 4.8 s
# replays, a quick calibration).
#
# usage: docs/gallery/make.sh [MEMSTUB]
#   MEMSTUB  the memstub to run (default: build/memstub of this source tree)
# Needs cc, gnuplot and python3 (docs/gallery/png8.py makes the PNGs small),
# and chromium for the screenshot of memstub report's page.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
memstub=${1:-$root/build/memstub}
case $memstub in /*) ;; *) memstub=$PWD/$memstub ;; esac
[ -x "$memstub" ] || { echo "make.sh: no memstub at $memstub (build it, or name it)" >&2; exit 2; }
PATH=$(dirname "$memstub"):$PATH
export PATH
unset COLUMNS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
cp "$root"/traces/samples/*.csv "$here/alloc.c" .
size=960x720
md=$work/gallery.md

# run CMD...: run it quietly, and add it to the commands of the next figure.
cmds=''
run() {
  cmds="$cmds$*
"
  "$@" > /dev/null 2>> "$work/log" || { cat "$work/log" >&2; exit 1; }
}
# figure NAME TITLE TEXT: the PNG made by the last commands, small, into
# docs/gallery/NAME.png, with its section in gallery.md.
figure() {
  python3 "$here/png8.py" "$2.png" "$here/$2.png"
  printf '## %s\n\n%s\n\n```sh\n%s```\n\n![%s](gallery/%s.png)\n\n' "$1" "$3" "$cmds" "$1" "$2" >> "$md"
  cmds=''
}

cat > "$md" <<'EOF'
# Gallery

The figures memstub draws, each with the commands that made it
([compare-and-plot.md](compare-and-plot.md#the-plot) says how to read
them; [calibration.md](calibration.md) the calibration's). They were made
by `docs/gallery/make.sh`, which runs these commands again in a scratch
directory holding a copy of `traces/samples` and `docs/gallery/alloc.c`, and
makes the PNGs smaller (`docs/gallery/png8.py`: 256 colours). The figures
are drawn at `--size 960x720` to keep them small; the default is 1200x900.
Times and the replays' errors are this host's.

EOF

run memstub demo --no-figure
run memstub plot synthetic-4.8s.csv memstub-demo/replayed.csv -o demo.png --size $size
figure "The demo's figure" demo "\`memstub demo\` replays the bundled 4.8 s synthetic trace and draws it
against the replay (its step 6 draws \`memstub-demo/figure3.png\` the same way,
at the default size). The trace has no resident columns, so the resident
panel holds the replay's curves alone and only the replay's peak is
labelled there."

run cc -O1 -g -o alloc alloc.c
run memstub record --sites -o alloc.csv -- ./alloc
run memstub gen alloc.csv -o alloc.h
run memstub build alloc.h -o alloc_stub
run ./alloc_stub --measure alloc.replayed.csv
run memstub plot alloc.csv alloc.replayed.csv -o recorded.png --size $size
figure "A recorded program against its stub" recorded "A small program (\`docs/gallery/alloc.c\`: a heap growing in 40 steps, then
freed in two passes) recorded with \`memstub record\`, and the stub made from
the trace, replayed while measuring. The original is drawn on the stub's
timeline (the recorder's own cost taken out); the recorder measured
resident memory and the CPU time, so the resident and work panels appear."

run memstub replay synthetic-4.8s.csv --measure deadline.csv
run memstub replay synthetic-4.8s.csv --timing usleep --measure usleep.csv
run memstub plot synthetic-4.8s.csv deadline.csv usleep.csv -o two-replays.png --size $size
figure "Two replays" two-replays "The same trace replayed twice, with deadline timing and with the paper's
relative sleeps: each replay has its own line and point type, a peak
label of its own in each panel, and a column in the legend; the time error
shows the sleeps' drift adding up."

run memstub plot nonlifo.csv -o no-rss.png --size $size
figure "A trace without resident memory" no-rss "A trace of stack and heap only (no \`rss_bytes\`, \`mapped_bytes\` or work
columns) draws those two panels and nothing else."

run memstub replay alloc.csv --heap-scale 0.5 --time-scale 0.7 --measure alloc.what-if.csv
run memstub plot alloc.csv alloc.what-if.csv -o what-if.png --size $size
figure "A what-if" what-if "The recorded program replayed with half the heap, 30 % faster. The replay's
\`# transforms:\` line says so, and the title reads before and after."

run memstub report alloc.csv alloc.replayed.csv alloc.what-if.csv -o report.html
# The whole page in a screenshot: as tall as the page says it is (its body's
# data-height, once its script ran), headless and without a network.
browse() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir="$work/profile" "$@" 2>> "$work/log"
}
height=$(browse --window-size=1100,900 --dump-dom "file://$work/report.html" | sed -n 's/.*<body[^>]* data-height="\([0-9]*\)".*/\1/p')
[ -n "$height" ] || { cat "$work/log" >&2; echo "make.sh: the page's script did not run" >&2; exit 1; }
browse --window-size=1100,"$height" --screenshot="$work/report.png" "file://$work/report.html" > /dev/null
figure "The report" report "\`memstub report\` puts the recorded program (with \`--sites\`), its replay and
the what-if on one HTML page: the files and their figures, what compare says
of each replay (the before and after table of the what-if, the replay's
fidelity, each verdict and the differences by design), the curves of every
column with zoom (drag across a panel; shown here whole), the lateness by
cause and the allocation sites at the heap's peak. The page needs nothing
but a browser ([compare-and-plot.md](compare-and-plot.md#the-report))."

run memstub calibrate --quick -o host.profile --plot calibration.png
figure "The calibration's fits" calibration "\`memstub calibrate --plot\`: the samples of each calibration function and
the model fitted to them; the keys below the panels, the log time axes in
ns, µs and ms."

# The text figure: no -o, as wide as the terminal ($COLUMNS).
COLUMNS=100 memstub plot synthetic-4.8s.csv deadline.csv usleep.csv > text.txt 2>> "$work/log"
cat >> "$md" <<EOF
## The text figure

Without \`-o\`, \`memstub plot\` prints the figure as text, as wide as the
terminal; each panel's name stands on its top border, the tic labels carry
the units, and the legend is below the time axis.

\`\`\`sh
COLUMNS=100 memstub plot synthetic-4.8s.csv deadline.csv usleep.csv
\`\`\`

\`\`\`
$(cat text.txt)
\`\`\`
EOF
cp "$md" "$root/docs/gallery.md"
echo "make.sh: docs/gallery.md and $(ls "$here"/*.png | wc -l) figures in docs/gallery/"
