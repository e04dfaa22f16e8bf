#!/usr/bin/env bash
# Installs whatever convexnn needs and is missing, idempotently:
#   Debian packages (Jupyter, Chromium, cvxopt, PyTorch for `convexnn bench`), the pinned Go tools (GoNB,
#   goimports, gopls -> bin/), the npm chart assets (-> .cache/assets) and the
#   "Go (convexnn)" Jupyter kernel (-> .cache/jupyter/kernels/convexnn).
# Takes seconds when everything is present.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || die "Go is not installed (need Go $(sed -n 's/^go //p' go.mod) or newer): see https://go.dev/doc/install"

# 1. Debian packages: build/requirements lists every command and Python module convexnn runs outside
#    Go with the package that provides it; a check that fails (a command absent or broken, a module
#    Python cannot find) installs its package, whatever dpkg says is installed.
# failing runs every check of build/requirements at once (commands in parallel, modules in one Python) and
# prints the failing lines as "package<TAB>check".
failing() {
  local tmp kind pkg rest i=0; tmp=$(mktemp -d)
  local -a mods=() modpkgs=()
  while read -r kind pkg rest; do
    [[ -z $kind || $kind == \#* ]] && continue
    case $kind in
      pre|cmd) i=$((i + 1)); ( read -ra argv <<<"$rest"; "${argv[@]}" >/dev/null 2>&1 || printf '%s\t%s\n' "$pkg" "$rest" >"$tmp/$i" ) & ;;
      py) mods+=("$rest"); modpkgs+=("$pkg") ;;
      deb) dpkg-query -W -f='${Status}' "$rest" 2>/dev/null | grep -q 'install ok installed' || printf '%s\t%s\n' "$pkg" "$rest" ;;
      *) die "build/requirements: unknown kind $kind" ;;
    esac
  done < build/requirements
  if ((${#mods[@]})); then
    if [ -x /usr/bin/python3 ]; then
      /usr/bin/python3 -c 'import importlib.util, sys
for pkg, mod in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        found = importlib.util.find_spec(mod) is not None
    except Exception:
        found = False
    if not found:
        print(pkg + "\t" + mod)' $(for j in "${!mods[@]}"; do printf '%s %s ' "${modpkgs[$j]}" "${mods[$j]}"; done)
    else
      for j in "${!mods[@]}"; do printf '%s\t%s\n' "${modpkgs[$j]}" "${mods[$j]}"; done
    fi
  fi
  wait
  cat "$tmp"/* 2>/dev/null || true
  rm -rf "$tmp"
}
fails=$(failing)
pre=$(awk -F'\t' '$1 == "-" {print $2}' <<<"$fails")
[ -z "$pre" ] || die "$(echo $pre | tr '\n' ';') fails: the README's prerequisites are Go $(sed -n 's/^go //p' go.mod)+, git, apt and npm"
missing=($(awk -F'\t' '$1 != "-" {print $1}' <<<"$fails" | sort -u))
if ((${#missing[@]})); then
  say "failing: $(cut -f2 <<<"$fails" | paste -sd ';' | sed 's/;/; /g')"
  command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get: install them (or their equivalents: Jupyter Notebook 6 with nbconvert, Chromium, cvxopt, PyTorch) by hand"
  if [ "$(id -u)" = 0 ]; then sudo=(); elif sudo -n true 2>/dev/null; then sudo=(sudo -n); else
    die "missing Debian packages: ${missing[*]}. Run: sudo apt-get install -y ${missing[*]}  (setup needs root or password-less sudo to do it)"
  fi
  say "installing Debian packages: ${missing[*]}"
  "${sudo[@]}" apt-get update -qq
  # --reinstall: a package dpkg calls installed whose command is broken gets its files back.
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --reinstall --no-install-recommends "${missing[@]}" >/dev/null
  fails=$(failing)
  [ -z "$fails" ] || die "still failing after installing ${missing[*]}: $(cut -f2 <<<"$fails" | paste -sd ';' | sed 's/;/; /g')"
fi

# 2. Go modules (go.sum pins them) and the pinned Go tools (versions in go.mod), rebuilt only when go.mod changes.
go mod download || die "downloading Go modules failed: the Go module proxy must be reachable the first time"
mkdir -p bin
for t in github.com/janpfeifer/gonb:gonb golang.org/x/tools/cmd/goimports:goimports golang.org/x/tools/gopls:gopls; do
  pkg=${t%%:*} name=${t##*:}
  if [ ! -x "bin/$name" ] || [ go.mod -nt "bin/$name" ] || [ go.sum -nt "bin/$name" ]; then
    say "building $name ($(go list -m -f '{{.Version}}' "${pkg%/cmd/*}" 2>/dev/null || echo pinned))"
    go build -o "bin/$name" "$pkg" || die "building $pkg failed (the versions are pinned in go.mod; the Go module proxy must be reachable the first time)"
  fi
done

# 3. npm assets: echarts, echarts-gl (offline charts), requirejs and MathJax 2
#    (offline nbconvert HTML exports), at the versions locked in build/assets.
npmdir=.cache/npm
if ! cmp -s build/assets/package-lock.json "$npmdir/package-lock.json" || [ ! -d "$npmdir/node_modules/echarts" ]; then
  command -v npm >/dev/null || die "npm is missing: install Node.js and npm (Debian: apt-get install npm) to fetch the chart assets"
  say "fetching chart assets from the npm registry"
  rm -rf "$npmdir"; mkdir -p "$npmdir"
  cp build/assets/package.json build/assets/package-lock.json "$npmdir/"
  (cd "$npmdir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null) ||
    die "npm ci failed: the npm registry must be reachable the first time (assets go to $npmdir)"
fi
mkdir -p .cache/assets
for f in echarts/dist/echarts.min.js echarts-gl/dist/echarts-gl.min.js requirejs/require.js; do
  cmp -s "$npmdir/node_modules/$f" ".cache/assets/$(basename "$f")" || cp "$npmdir/node_modules/$f" .cache/assets/
done
ln -sfn ../npm/node_modules/mathjax .cache/assets/mathjax

# 4. BLAS: with libopenblas-dev present, build with -tags openblas (OpenBLAS
#    registered for gonum's blas64 and Cholesky), for the command line, the
#    tests and the notebook kernel alike; the pure-Go build stays tested.
tags=""
coretype=""
if dpkg-query -W -f='${Status}' libopenblas-dev 2>/dev/null | grep -q 'install ok installed'; then
  tags="openblas"
  # OpenBLAS 0.3.21 misdetects AVX-512 Zen CPUs; name the kernel set they run.
  grep -q avx512f /proc/cpuinfo 2>/dev/null && coretype="SkylakeX"
fi
printf '%s\n' "$tags" > .cache/buildtags
printf '%s\n' "$coretype" > .cache/openblas-coretype

# 5. The "Go (convexnn)" kernel, GoNB with --go_work pointing at this working
#    tree, so notebooks import github.com/convexnn/convexnn/... from here.
kdir=.cache/jupyter/kernels/convexnn
mkdir -p "$kdir"
TAGS="$tags" CORETYPE="$coretype" REPO="$repo" GOBIN_DIR="$(dirname "$(command -v go)")" /usr/bin/python3 - "$kdir/kernel.json" <<'PY'
import json, os, sys
repo = os.environ["REPO"]
spec = {
    "argv": [f"{repo}/bin/gonb", "--kernel", "{connection_file}", f"--go_work={repo}"],
    "display_name": "Go (convexnn)",
    "language": "go",
    "interrupt_mode": "message",
    "env": {
        "PATH": f"{repo}/bin:{os.environ['GOBIN_DIR']}:/usr/local/bin:/usr/bin:/bin",
        "CONVEXNN_ASSETS": f"{repo}/.cache/assets",
        # Each cell is built and linked as a new program: without DWARF
        # (-ldflags=-w; symbols stay, so panics keep their stack traces) the
        # link takes about 0.5 s less per cell.
        "GOFLAGS": "-ldflags=-w",
    },
}
if os.environ["TAGS"]:
    spec["env"]["GOFLAGS"] += " -tags=" + os.environ["TAGS"]
if os.environ["CORETYPE"]:
    spec["env"]["OPENBLAS_CORETYPE"] = os.environ["CORETYPE"]
path = sys.argv[1]
new = json.dumps(spec, indent=1)
try:
    old = open(path).read()
except OSError:
    old = ""
if old != new:
    open(path, "w").write(new)
PY
cp -n "$(go list -m -f '{{.Dir}}' github.com/janpfeifer/gonb)/internal/kernel/Go_gopher_favicon.svg" "$kdir/logo-svg.svg" 2>/dev/null || true
chmod u+w "$kdir/logo-svg.svg" 2>/dev/null || true
say "ready (BLAS: ${tags:-pure Go}; kernel \"Go (convexnn)\" in $repo/$kdir; use JUPYTER_PATH=$repo/.cache/jupyter)"
