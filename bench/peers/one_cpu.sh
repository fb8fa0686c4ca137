# Sourced by encoder_peers.sh and peer_pairs.sh: one-thread runs pinned to one CPU.
# cpus: the CPUs this process may use, one a line; one_cpu: ONE_CPU, default the last of them
# (ONE_CPU=none: not pinned); on TH CMD...: runs CMD on one_cpu when TH is 1, else wherever the
# scheduler puts it. The shared machines' two vCPUs differ by up to a third at a time, and an
# unpinned process lands on either.
cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status | tr , '\n' |
    awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }')
one_cpu=${ONE_CPU:-$(echo "$cpus" | tail -n 1)}
on() {
    local th=$1
    shift
    if [ "$th" = 1 ] && [ "$one_cpu" != none ]; then taskset -c "$one_cpu" "$@"; else "$@"; fi
}
