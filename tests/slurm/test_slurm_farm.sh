#!/usr/bin/env bash
# End to end on one node: munged, slurmctld and slurmd started here on loopback (config, state
# and logs in a temp folder; a gres "gpu" stand-in for the GPU pool), docker-registry as the hub.
# contrib/slurm/kbpkg-slurm-farm plans, submits a job array per pool and singleton merges; the
# resulting index must be byte-identical to a one-machine `kbpkg farm` of the same packages.
set -euo pipefail
: "${KBPKG_BIN:?}" "${KB_SOURCE_DIR:?}"
for tool in slurmctld slurmd munged sbatch squeue docker-registry curl python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/install-deps.sh installs it)"
    exit 77
  fi
done

T=$(mktemp -d /tmp/kbpkg-slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$T"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$T"/log/*.log "$T"/runs/*/*.log; do [ -f "$f" ] && { echo "== $f"; tail -20 "$f"; }; done >&2
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # seconds, command...
  local until=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $until ] || return 1; sleep 0.2; done
}

mkdir -p "$T"/{etc,log,state,spool,munge,registry,runs}
# ---- munge: a key of our own, a socket of our own ----
dd if=/dev/urandom of="$T/munge/key" bs=1024 count=1 status=none
chmod 700 "$T/munge"
chmod 400 "$T/munge/key"
munged -F -f --key-file="$T/munge/key" --socket="$T/munge/sock" --pid-file="$T/munge/pid" \
  --log-file="$T/log/munged.log" --seed-file="$T/munge/seed" 2> "$T/log/munged.err" &
pids+=($!)
wait_for 10 test -S "$T/munge/sock" || fail "munged did not start"

# ---- slurm: one node, a gres gpu stand-in ----
ctl_port=$(free_port)
d_port=$(free_port)
cat > "$T/etc/slurm.conf" <<CONF
ClusterName=kbtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/state/slurmctld.pid
SlurmdPidFile=$T/spool/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
GresTypes=kbgpu
NodeName=kbnode NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=$(nproc) Gres=kbgpu:1 State=UNKNOWN
PartitionName=kb Nodes=ALL Default=YES MaxTime=30 State=UP
CONF
# A generic gres named kbgpu stands in for the GPUs (gres/gpu would look for device files).
echo "NodeName=kbnode Name=kbgpu Count=1" > "$T/etc/gres.conf"
export SLURM_CONF=$T/etc/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" 2> "$T/log/slurmctld.err" &
pids+=($!)
slurmd -D -N kbnode -f "$SLURM_CONF" 2> "$T/log/slurmd.err" &
pids+=($!)
wait_for 60 sh -c 'sinfo -h -N -o %t | grep -q idle' || fail "the node never became idle"

# ---- the hub: docker-registry on loopback ----
reg_port=$(free_port)
cat > "$T/registry/config.yml" <<CONF
version: 0.1
storage:
  filesystem:
    rootdirectory: $T/registry/storage
http:
  addr: 127.0.0.1:$reg_port
CONF
docker-registry serve "$T/registry/config.yml" > "$T/log/registry.log" 2>&1 &
pids+=($!)
wait_for 20 curl -sf "http://127.0.0.1:$reg_port/v2/" || fail "docker-registry did not start"

# ---- two packages, a pools file putting one pool behind the gpu gres ----
mkdir -p "$T/pkgs"
cp -r "$KB_SOURCE_DIR/tests/data/publish/cpu-add" "$T/pkgs/one"
cp -r "$KB_SOURCE_DIR/tests/data/publish/cpu-add" "$T/pkgs/two"
sed -i 's|^name: .*|name: kbtest/cpu-add-two|' "$T/pkgs/two/kernel.yaml"
cat > "$T/pools.json" <<CONF
{"pools": [{"name": "cpu-gpu", "backend": "cpu", "gpu": true}]}
CONF
export KBPKG_CACHE=$T/cache XDG_CONFIG_HOME=$T/config KBPKG_DEVICES=none KBPKG_CPU=x86_64_v3
export KBPKG=$KBPKG_BIN KBPKG_SLURM_DIR=$T/runs KBPKG_SLURM_GPU_GRES=kbgpu:1
slurm_hub="oci://127.0.0.1:$reg_port/slurm"
one_hub="oci://127.0.0.1:$reg_port/one"

timeout 300 "$KB_SOURCE_DIR/contrib/slurm/kbpkg-slurm-farm" --pools "$T/pools.json" --wait 240 \
  "$slurm_hub" "$T/pkgs" > "$T/log/driver.log" 2>&1 || { cat "$T/log/driver.log"; fail "the Slurm farm did not finish"; }
grep -q "pool cpu-gpu: 4 build(s)" "$T/log/driver.log" || { cat "$T/log/driver.log"; fail "expected one array of 4 builds"; }
[ "$(grep -c '^merge ' "$T/log/driver.log")" = 2 ] || fail "expected 2 merges"
grep -h "merged" "$T"/runs/*/kbmerge-*.log >/dev/null || fail "no merge log says merged"

KBPKG_CACHE=$T/cache-one "$KBPKG_BIN" --registry "$one_hub" farm "$T/pkgs" > "$T/log/one.log" 2>&1 \
  || { cat "$T/log/one.log"; fail "one-machine farm failed"; }

index() { # namespace package -> sha256 of the version's index bytes
  curl -sf -H "Accept: application/vnd.oci.image.index.v1+json" \
    "http://127.0.0.1:$reg_port/v2/$1/$2/manifests/0.1.0" | sha256sum | cut -d' ' -f1
}
for pkg in kbtest/cpu-add kbtest/cpu-add-two; do
  a=$(index slurm "$pkg")
  b=$(index one "$pkg")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$pkg: Slurm index $a, one-machine index $b"
  echo "$pkg: index sha256 $a on both"
done
# A second run has nothing to do.
"$KBPKG_BIN" --registry "$slurm_hub" farm plan "$T/pkgs" | grep -q '"items": \[\]' || fail "a second plan is not empty"
echo PASS
