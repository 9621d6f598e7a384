#!/usr/bin/env bash
# The install smoke tests' sample (packaging/smoke.sh, packaging/wheel-smoke.sh):
#   bash packaging/sample-media.sh DIR
# 18 files of the media corpus ($FRAMECULL_MEDIA, default ../shared/media): the first six
# under 3 MB of its images, videos and broken files; or, without the corpus, generated ones
# (a video in MPEG-4 Part 2 and one in H.264, a picture, a video cut short).
set -euo pipefail
cd "$(dirname "$0")/.."
data="$1"
media="${FRAMECULL_MEDIA:-$PWD/../shared/media}"
mkdir -p "$data"
if [ -d "$media/video" ]; then
  for sub in image video broken; do
    mkdir -p "$data/$sub"
    find "$media/$sub" -maxdepth 1 -type f -size -3M | sort | sed -n 1,6p \
      | while read -r f; do cp "$f" "$data/$sub/"; done
  done
else
  echo "sample-media.sh: no corpus at $media: generated media instead" >&2
  ffmpeg -v error -f lavfi -i testsrc2=size=320x240:rate=25:duration=2 -pix_fmt yuv420p "$data/a.mp4"
  ffmpeg -v error -f lavfi -i testsrc=size=256x144:rate=30:duration=3 -c:v libx264 -g 15 "$data/b.mp4"
  ffmpeg -v error -f lavfi -i mandelbrot=size=320x240 -frames:v 1 "$data/c.png"
  head -c 3000 "$data/a.mp4" >"$data/truncated.mp4"
fi
