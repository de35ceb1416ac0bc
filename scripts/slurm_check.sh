#!/usr/bin/env bash
# The SLURM profile (profiles/slurm) on a real one-node SLURM cluster started on this machine: Debian's
# slurm-wlm and munge, no accounting (no slurmdbd), a fake GPU (a gres without a device), all of it under
# $MR2_SLURM_DIR (default /tmp/mr2-slurm-check) on its own ports and munge socket, stopped on exit.
#   sudo bash scripts/slurm_check.sh [config/smoke.yaml]
# It runs the config once locally and once through the profile, compares the two results folders file
# by file, byte for byte (every CSV, model.pt, metrics.json, the figures, the report and its page),
# lists what each cluster job asked SLURM for (partition, CPUs, memory, GPU) next to what it used (its
# benchmark's max_rss), and sends one training job that declares
# a GPU (`--config gpus=1 device=cpu`, another output root) to check it, alone, queues on the gpu partition.
# Not in CI: it needs root, the Debian packages (installed when missing) and minutes of CPU. Its report
# is $MR2_SLURM_DIR/report.txt. MR2_SLURM_LOCAL=<dir> reuses a finished local run of the same config.
# $MR2_SLURM_DIR is this script's own scratch folder: one it made before (it holds the file
# .mr2-slurm-check) is emptied and reused; a folder holding anything else is refused, never deleted.
# Every check comes before anything is installed, deleted or started.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=env.sh
source "$REPO/scripts/env.sh"
CONFIG="$(cd "$REPO" && realpath "${1:-config/smoke.yaml}")"
DIR="$(realpath -m -- "${MR2_SLURM_DIR:-/tmp/mr2-slurm-check}")"
MARK="$DIR/.mr2-slurm-check"
REPORT="$DIR/report.txt"
[ "$(id -u)" = 0 ] || { echo "slurm_check: needs root (it starts munged, slurmctld and slurmd)" >&2; exit 2; }
[[ "$DIR" =~ ^/[A-Za-z0-9_./-]+$ ]] && [ "$DIR" != / ] || {
    echo "slurm_check: MR2_SLURM_DIR=$DIR: letters, digits and _ . - / only (slurm.conf holds it unquoted)" >&2; exit 2; }
if [ -e "$DIR" ] && [ ! -f "$MARK" ] && [ -n "$(ls -A -- "$DIR" 2>/dev/null || echo x)" ]; then
    echo "slurm_check: $DIR holds files this script did not make (no $MARK): not touching it; give MR2_SLURM_DIR a new folder" >&2
    exit 2
fi
# The config where srun inside a job finds it: the jobstep plugin drops every SLURM_* variable (SLURM_CONF
# too) before its srun, so a node needs /etc/slurm/slurm.conf (or a configless slurmd), as real ones have.
ETC_CONF=/etc/slurm/slurm.conf
if [ -e "$ETC_CONF" ] && [ "$(readlink "$ETC_CONF")" != "$DIR/etc/slurm.conf" ]; then
    echo "slurm_check: $ETC_CONF exists (another cluster's?): not touching it" >&2; exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
fi

rm -rf -- "$DIR"  # this script's own folder (its mark checked above), or an empty one
mkdir -p "$DIR"/{etc,state,spool,log,run,munge,cluster,dev}
touch "$MARK"
stop() {  # the daemons this script started, by their pid files, and its link in /etc/slurm
    for daemon in slurmd slurmctld munged; do
        [ -f "$DIR/run/$daemon.pid" ] && kill "$(cat "$DIR/run/$daemon.pid")" 2>/dev/null || true
    done
    [ "$(readlink "$ETC_CONF")" = "$DIR/etc/slurm.conf" ] && rm -f "$ETC_CONF"
    return 0
}
trap stop EXIT

head -c 1024 /dev/urandom > "$DIR/munge/munge.key"
chmod 400 "$DIR/munge/munge.key"
munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --log-file="$DIR/log/munged.log" --pid-file="$DIR/run/munged.pid" --seed-file="$DIR/munge/munged.seed"

HOST="$(hostname -s)"
MEMORY=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 2048 ))
cat > "$DIR/etc/slurm.conf" <<EOF
ClusterName=mr2check
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
# jobs stay in squeue (and scontrol) this long after they end: >= 120 s for the plugin's squeue checks
MinJobAge=3600
GresTypes=gpu
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$MEMORY Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$HOST MaxTime=INFINITE State=UP
EOF
touch "$DIR/dev/gpu0"  # the fake GPU: a device file no job opens
echo "NodeName=$HOST Name=gpu File=$DIR/dev/gpu0" > "$DIR/etc/gres.conf"
export SLURM_CONF="$DIR/etc/slurm.conf"
mkdir -p /etc/slurm
ln -sfn "$SLURM_CONF" "$ETC_CONF"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 60); do
    [ "$(sinfo -h -o %T -p cpu 2>/dev/null)" = idle ] && break
    sleep 1
done
sinfo

# --------------------------------------------------------------------------------- the two runs
if [ -z "${MR2_SLURM_LOCAL:-}" ]; then
    MR2_SLURM_LOCAL="$DIR/local"
    mkdir -p "$MR2_SLURM_LOCAL"
    (cd "$MR2_SLURM_LOCAL" && nice -n 19 snakemake -s "$REPO/Snakefile" --cores 2 --configfile "$CONFIG" > run.log 2>&1)
fi
cd "$DIR/cluster"
set +e
nice -n 19 snakemake -s "$REPO/Snakefile" --profile "$REPO/profiles/slurm" --configfile "$CONFIG" > run.log 2>&1
CLUSTER_RC=$?
# one model job that declares a GPU, to another output root: it must queue on the gpu partition
nice -n 19 snakemake -s "$REPO/Snakefile" --cores 1 results-gpu/run_folders.tsv --configfile "$CONFIG" \
    --config gpus=1 device=cpu output_root=results-gpu > gpu-folders.log 2>&1
GPU_RUN="$(awk -F'\t' 'NR == 2 {print $5}' results-gpu/run_folders.tsv)"
nice -n 19 snakemake -s "$REPO/Snakefile" --profile "$REPO/profiles/slurm" "results-gpu/$GPU_RUN/model.pt" \
    --configfile "$CONFIG" --config gpus=1 device=cpu output_root=results-gpu > gpu-run.log 2>&1
GPU_RC=$?
set -e

# --------------------------------------------------------------------------------- the report
{
    echo "config: $CONFIG; local run: $MR2_SLURM_LOCAL; cluster run: $DIR/cluster (exit $CLUSTER_RC); GPU job exit $GPU_RC"
    echo
    echo "== cluster jobs (squeue keeps them MinJobAge: every job the plugin submitted with sbatch)"
    squeue --states=all -O 'JobID:7,State:11,Partition:10,NumCPUs:5,MinMemory:11,tres-per-job:14,Comment:60' \
        | sed -E 's/rule_([a-z_0-9]+)_wildcards_.*/\1/' | sort -n
    echo
    echo "== peak memory used (MB, Snakemake's benchmarks: rule, largest max_rss)"
    for rule in prepare train evaluate; do
        printf '%s %s\n' "$rule" "$(find results/benchmarks/$rule -name '*.tsv' -exec tail -n 1 {} \; | awk '{print $3}' | sort -n | tail -n 1)"
    done
    echo
    echo "== the results, file by file, the local run's against the cluster run's: every CSV (not the"
    echo "   runs' timings.csv: wall-clock seconds per epoch), model.pt, metrics.json, the figures (PNG,"
    echo "   PDF), the report and its page"
    same=0 differ=0
    while IFS= read -r file; do
        if cmp -s "$MR2_SLURM_LOCAL/$file" "$file"; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFERS $file"; fi
    done < <(cd "$MR2_SLURM_LOCAL" && find results \( -name '*.csv' ! -name timings.csv \) -o -name model.pt \
        -o -name metrics.json -o -name '*.png' -o -name '*.pdf' -o -name report.md -o -name report_page.html | sort)
    echo "$same identical, $differ different"
    echo
    echo "== SLURM's own logs (plugin): $DIR/cluster/.snakemake/slurm_logs (a successful job's is removed)"
    find .snakemake/slurm_logs -name '*.log' 2>/dev/null | head -n 5 || true
} | tee "$REPORT"
[ "$CLUSTER_RC" = 0 ] && [ "$GPU_RC" = 0 ]
