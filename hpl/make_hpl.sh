#!/bin/sh
# `make hpl`: HPL for `lu --algo hpl` on Debian/Ubuntu (as root or with sudo).
#
#   hpl/make_hpl.sh VENV
#
# Installs OpenBLAS and a C compiler, fetches the source package of HPC Challenge
# (hpcc, whose tarball carries HPL 2.0) with `apt-get source --download-only` (adding a
# deb-src line in /etc/apt/sources.list.d/linalg-io-deb-src.sources when there is none;
# only the orig tarball is needed, a missing debian.tar.xz does not matter), and builds
# it with hpl/build.sh against the venv's mpicc into VENV/lib/hpl. Without apt-get it
# says what to do instead and does nothing.
set -eu
venv=$1
here=$(cd "$(dirname "$0")" && pwd)
out="$venv/lib/hpl"
if ! command -v apt-get >/dev/null 2>&1; then
  echo "make hpl: no apt-get here; build HPL with hpl/build.sh HPL-SOURCE.tar.gz DIR (MPICC=your mpicc) and use --hpl DIR"
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends libopenblas-dev gcc libc6-dev dpkg-dev >/dev/null
src="$(pwd)/build/hpl-source"
mkdir -p "$src"
fetch() { (cd "$src" && apt-get source --download-only hpcc >/dev/null 2>&1) || true; }
ls "$src"/hpcc_*.orig.tar.gz >/dev/null 2>&1 || fetch
if ! ls "$src"/hpcc_*.orig.tar.gz >/dev/null 2>&1; then
  . /etc/os-release
  if [ "${ID:-}" = ubuntu ]; then
    uri=http://archive.ubuntu.com/ubuntu components="main universe"
  else
    uri=http://deb.debian.org/debian components=main
  fi
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n' "$uri" \
    "$VERSION_CODENAME" "$components" |
    $sudo tee /etc/apt/sources.list.d/linalg-io-deb-src.sources >/dev/null
  $sudo apt-get update -qq
  fetch
fi
tarball=$(ls "$src"/hpcc_*.orig.tar.gz 2>/dev/null | head -n 1)
if [ -z "$tarball" ]; then
  echo "make hpl: apt-get source --download-only hpcc fetched no hpcc_*.orig.tar.gz" >&2
  exit 1
fi
MPICC="$venv/bin/mpicc" "$here/build.sh" "$tarball" "$out"
