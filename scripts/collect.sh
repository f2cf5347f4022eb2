#!/usr/bin/env bash
# Save the kubectl outputs `aicr-catalog snapshot --from DIR` turns into an AICR Snapshot.
#
# Run it where kubectl reaches the cluster (a bastion); copy DIR to wherever the catalog is and
# run `aicr-catalog snapshot --from DIR -o snapshot.yaml`, then `aicr-catalog preflight`.
# It runs the same kubectl commands as `aicr-catalog snapshot` does live (generator/scale/collect.py,
# SOURCES), and writes the same file names.
#
# Usage: scripts/collect.sh DIR [--kubeconfig FILE] [--context NAME]
# Environment:
#   WINDOW=60            seconds between the two /metrics scrapes (API rejections per minute)
#   SYSCTL_IMAGE=busybox:1.36   image of the short-lived pods that read host sysctls
#   NODE_PODS=1          0: run no pod on the nodes (the OS.sysctl readings are then missing)
#   CONFIGZ_JOBS=16      parallel /configz requests (one per GPU node)
#
# Read-only except for NODE_PODS: one pod per sampled node (a GPU node, and the node running
# slurmctld or else a system node), deleted when it has printed the sysctls.
# Edit DIR/declared.yaml afterwards: the readings kubectl cannot see are declared there.
set -euo pipefail

usage() { echo "usage: $0 DIR [--kubeconfig FILE] [--context NAME]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
dir="$1"; shift
kubectl_args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kubeconfig|--context) [[ $# -ge 2 ]] || usage; kubectl_args+=("$1" "$2"); shift 2 ;;
    *) usage ;;
  esac
done
WINDOW="${WINDOW:-60}"
SYSCTL_IMAGE="${SYSCTL_IMAGE:-busybox:1.36}"
NODE_PODS="${NODE_PODS:-1}"
CONFIGZ_JOBS="${CONFIGZ_JOBS:-16}"

k() { kubectl ${kubectl_args[@]+"${kubectl_args[@]}"} "$@"; }
mkdir -p "${dir}/configz" "${dir}/sysctl"

save() {  # save FILE kubectl-args...: a failure is reported and leaves no file
  local file="$1"; shift
  echo "collect: kubectl $*" >&2
  if ! k "$@" > "${dir}/${file}.tmp"; then
    echo "collect: warning: kubectl $* failed; ${file} not written" >&2
    rm -f "${dir}/${file}.tmp"
    return 0
  fi
  mv "${dir}/${file}.tmp" "${dir}/${file}"
}

date -u +%Y-%m-%dT%H:%M:%SZ > "${dir}/collected-at.txt"
save version.json version -o json
save nodes.json get nodes -o json
save daemonsets.json get daemonsets --all-namespaces -o json
save nodesets.json get nodesets.slinky.slurm.net --all-namespaces -o json
save deployments-kube-system.json get deployments --namespace kube-system -o json
save configmaps-kube-system.json get configmaps --namespace kube-system -o json
save services.json get services --all-namespaces -o json
save pods.json get pods --all-namespaces -o json
save metrics-start.txt get --raw /metrics
echo "collect: waiting ${WINDOW}s between the two /metrics scrapes" >&2
sleep "${WINDOW}"
save metrics-end.txt get --raw /metrics
echo "${WINDOW}" > "${dir}/metrics-window-seconds.txt"

# the kubelet configuration of every GPU node (registryPullQPS)
mapfile -t gpu_nodes < <(k get nodes -l nvidia.com/gpu.present=true \
  -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
running=0
for node in "${gpu_nodes[@]}"; do
  [[ -n "${node}" ]] || continue
  save "configz/${node}.json" get --raw "/api/v1/nodes/${node}/proxy/configz" &
  running=$((running + 1))
  if (( running >= CONFIGZ_JOBS )); then wait -n; running=$((running - 1)); fi
done
wait

if [[ "${NODE_PODS}" == "1" ]]; then
  mapfile -t hosts < <(k get pods --all-namespaces -l app.kubernetes.io/name=slurmctld \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | grep -v '^$' || true)
  if [[ ${#hosts[@]} -eq 0 ]]; then
    mapfile -t hosts < <(k get nodes -l 'nvidia.com/gpu.present!=true' \
      -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | head -n 1)
  fi
  files="/proc/sys/net/netfilter/nf_conntrack_max /proc/sys/net/core/somaxconn /proc/sys/net/ipv4/tcp_max_syn_backlog"
  for node in $(printf '%s\n' "${gpu_nodes[@]:0:1}" "${hosts[@]}" | grep -v '^$' | sort -u); do
    name="aicr-sysctl-$(echo "${node}" | tr '[:upper:]' '[:lower:]' | tr -c 'a-z0-9-\n' '-' | cut -c1-40)"
    overrides='{"apiVersion":"v1","spec":{"automountServiceAccountToken":false,"hostNetwork":true,"nodeName":"'"${node}"'","tolerations":[{"operator":"Exists"}]}}'
    # shellcheck disable=SC2016  # $f is expanded by the pod's shell, not here
    save "sysctl/${node}.txt" run "${name%-}" --namespace default --image "${SYSCTL_IMAGE}" \
      --restart Never --rm --attach --quiet --overrides "${overrides}" --command -- \
      sh -c 'for f in '"${files}"'; do [ -r "$f" ] && echo "$f=$(cat "$f")"; done'
  done
fi

if [[ ! -f "${dir}/declared.yaml" ]]; then
  cat > "${dir}/declared.yaml" <<'EOF'
# Readings kubectl cannot see: fill in each value and say where it came from, or delete the entry
# (preflight then reports it missing). Values: tier standard|xl|2xl|4xl|8xl; true|false; a number.
K8s.control-plane.tier:
  value: FILL-IN
  source: EKS console or API, the cluster's Provisioned Control Plane tier
K8s.registry.mirror-configured:
  value: FILL-IN
  source: the node group's containerd registry configuration (mirror or pull-through cache)
K8s.network.subnet-free-ips:
  value: FILL-IN
  source: aws ec2 describe-subnets, the sum of AvailableIpAddressCount over the node subnets
EOF
fi
echo "collect: wrote ${dir}; edit ${dir}/declared.yaml, then: aicr-catalog snapshot --from ${dir} -o snapshot.yaml" >&2
