# Sourced by the chroot builders (conformance/chroots.sh,
# conformance/nova/chroots.sh).
#
# mirror: the first Debian (non-security) URI of the machine's apt sources,
# deb822 (URIs:) or one-line (deb URI suite ...) format
mirror() {
    local m
    m="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' \
        | grep -v -- '-security' | head -1 || true)"
    if [[ -z "$m" ]]; then
        m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}' \
            | grep -v -- '-security' | head -1 || true)"
    fi
    echo "${m:-http://deb.debian.org/debian}"
}
