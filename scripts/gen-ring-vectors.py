#!/usr/bin/python3
"""Generate golden vectors for package ring from the real tooz HashRing.

What it produces
    ring/testdata/vectors.json.gz: rings (host lists, partition exponent,
    hash algorithm, tooz's len()) and lookups on them (key, ignore set,
    replicas, and the sorted answer of tooz's HashRing.get_nodes), plus the
    algorithm names tooz rejects. ring/vectors_test.go replays every vector.

How to rerun
    /usr/bin/python3 scripts/gen-ring-vectors.py            # from the repo root
    /usr/bin/python3 scripts/gen-ring-vectors.py -o FILE    # somewhere else

    Use Debian's /usr/bin/python3, which has python3-tooz; a pyenv python on
    PATH does not. The output is deterministic: the same tooz and the same
    SEED give a byte-identical file whatever PYTHONHASHSEED is.

Coverage
    Every algorithm Ironic's hash_ring_algorithm accepts
    (hashlib.algorithms_guaranteed) crossed with every partition exponent
    0..10, plus random rings of 1..300 hosts whose names mix dots, colons
    (host:6385), dashes, underscores, upper case, IPv4/IPv6 literals and
    non-ASCII ("cönductor-ü.例"); hosts are given with duplicates and in
    shuffled order. Keys are mostly random UUID strings (Ironic hashes
    node.uuid.encode('utf-8')), some arbitrary bytes (including b""), some
    exactly a partition's bytes (a host repeated k times, so the key's digest
    equals a partition's and bisect_right must step past it);
    replicas 0..3 (a few more on small rings), ignore sets that sometimes
    name hosts outside the ring.

Ambiguous rings
    If one host's UTF-8 bytes are a repetition of the same word as
    another's ("ab" and "abab", "a" and "aa"), partition r of one host and
    partition s of the other can hash the very same byte string, so their
    digests are equal. tooz keeps a dict digest -> host and the host inserted
    last wins; HashRing() inserts in Python set order, which depends on
    PYTHONHASHSEED. Such rings are marked "ambiguous"; for them:
      * "want" is what tooz answers when the hosts are added in sorted order
        (HashRing([]) then add_nodes(sorted(hosts))), the rule package ring
        implements;
      * "possible" lists every answer real tooz can give, obtained by adding
        the hosts of each colliding family in every order (the order of
        non-colliding hosts does not matter); null stands for "tooz never
        returns" (a host can lose all its partitions; get_nodes then loops
        forever once it needs that host to fill the replicas);
      * the generator re-runs tooz's own HashRing(hosts) under several
        PYTHONHASHSEED values in subprocesses, checks that each answer is in
        "possible", and records how many distinct answer sets it saw.
"""

import argparse
import gzip
import hashlib
import itertools
import json
import os
import random
import subprocess
import sys
import uuid

import tooz
from tooz import hashring

try:
    from importlib import metadata as _metadata
    TOOZ_VERSION = _metadata.version('tooz')
except Exception:  # pragma: no cover
    TOOZ_VERSION = getattr(tooz, '__version__', 'unknown')

SEED = 20240611
HASHSEEDS = list(range(12))
MAX_EXPONENT = 10

GUARANTEED = sorted(hashlib.algorithms_guaranteed)
# shake_* are in algorithms_guaranteed but their hexdigest() needs a length,
# so tooz raises TypeError; they are checked below, not assumed.
UNKNOWN_NAMES = ['nope', 'MD5', 'sha-256', '']

STEMS = ['conductor', 'ironic-conductor', 'ironic_cond', 'Conductor',
         'IRONIC', 'bm', 'cönductor-ü.例', 'node', 'ctl', 'Cond_Ü']
ODD_CHARS = ('abcxyzABCXYZ0123456789.-_:' 'éüßΩд例中')


# ---------------------------------------------------------------- tooz calls

def build(hosts, exponent, alg, order=None):
    """A tooz HashRing; order=None uses tooz's constructor (set order)."""
    if order is None:
        return hashring.HashRing(hosts, partitions=2 ** exponent,
                                 hash_function=alg)
    ring = hashring.HashRing([], partitions=2 ** exponent, hash_function=alg)
    ring.add_nodes(order)
    return ring


def answer(ring, key, ignore, replicas):
    """Sorted get_nodes answer, or None where tooz would never return."""
    ign = set(ignore)
    need = min(replicas, len(set(ring.nodes) - ign))
    present = set(ring._ring.values()) - ign
    if len(present) < need:
        return None
    return sorted(ring.get_nodes(key, ignore_nodes=list(ignore) or None,
                                 replicas=replicas))


# ------------------------------------------------------------ collisions

def primitive_root(b):
    """(w, k) with b == w * k and w as short as possible; (b'', 0) for b''."""
    n = len(b)
    for d in range(1, n + 1):
        if n % d == 0 and b[:d] * (n // d) == b:
            return b[:d], n // d
    return b'', 0


def colliding_families(hosts, exponent):
    """Groups of hosts (sorted) that share at least one partition digest."""
    partitions = 2 ** exponent
    groups = {}
    for h in sorted(set(hosts)):
        root, k = primitive_root(h.encode('utf-8'))
        if k:
            groups.setdefault(root, []).append((h, k))
    families = []
    for members in groups.values():
        if len(members) < 2:
            continue
        seen, hit = set(), False
        for _, k in members:
            lengths = {k * (r + 2) for r in range(partitions)}
            if seen & lengths:
                hit = True
            seen |= lengths
        if hit:
            families.append([h for h, _ in members])
    return families


def expected_len(hosts, exponent):
    """Number of distinct partition digests (tooz's len()), from theory."""
    keys = set()
    for h in set(hosts):
        root, k = primitive_root(h.encode('utf-8'))
        for r in range(2 ** exponent):
            keys.add((root, k * (r + 2)))
    return len(keys)


def orders(hosts, families):
    """Every insertion order that can matter: families permuted."""
    fam_hosts = {h for f in families for h in f}
    rest = sorted(set(hosts) - fam_hosts)
    for combo in itertools.product(*[itertools.permutations(f)
                                     for f in families]):
        yield rest + [h for perm in combo for h in perm]


# ------------------------------------------------------------- generation

def hostname(rng):
    stem = rng.choice(STEMS)
    n = rng.randrange(1000)
    style = rng.randrange(9)
    if style == 0:
        return '%s-%d.example.com' % (stem, n)
    if style == 1:
        return '%s%d:6385' % (stem, n)
    if style == 2:
        return '%s_%d' % (stem, n)
    if style == 3:
        return '%s-%d.Region1.CLOUD' % (stem.upper(), n)
    if style == 4:
        return 'cönductor-ü.例%d' % n
    if style == 5:
        return '10.%d.%d.%d' % (rng.randrange(256), rng.randrange(256),
                                rng.randrange(256))
    if style == 6:
        return '[fd00::%x]:6385' % rng.randrange(65536)
    if style == 7:
        return '%s-%03d' % (stem, n)
    return ''.join(rng.choice(ODD_CHARS)
                   for _ in range(rng.randint(1, 30)))


def host_count(rng):
    bucket = rng.randrange(10)
    if bucket == 0:
        return 1
    if bucket < 4:
        return rng.randint(2, 5)
    if bucket < 7:
        return rng.randint(6, 20)
    if bucket < 9:
        return rng.randint(21, 100)
    return rng.randint(101, 300)


def host_list(rng, count):
    hosts = set()
    while len(hosts) < count:
        hosts.add(hostname(rng))
    hosts = sorted(hosts)
    # Duplicates in the input (tooz dedups with set()), shuffled.
    dups = [rng.choice(hosts) for _ in range(rng.randrange(3))]
    out = hosts + dups
    rng.shuffle(out)
    return out


def key_for(rng, members, exponent):
    r = rng.random()
    if r < 0.04:
        # Exactly the bytes of a partition (host repeated k times), so the
        # key's digest equals a partition digest: bisect_right must pass it.
        k = rng.randint(2, min(2 ** exponent + 1, 12))
        return rng.choice(members).encode('utf-8') * k
    if r < 0.85:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4)).encode()
    if r < 0.87:
        return b''
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))


def lookup_specs(rng, hosts, exponent, count, max_replicas=3):
    members = sorted(set(hosts))
    specs = []
    for i in range(count):
        key = key_for(rng, members, exponent)
        if i % 3 == 0:
            ignore, replicas = [], 1          # Ironic's get_conductor_for
        else:
            replicas = rng.randint(0, max_replicas) if rng.random() < 0.1 \
                else rng.randint(1, max_replicas)
            ignore = []
            if rng.random() < 0.5:
                ignore = rng.sample(members, min(len(members),
                                                 rng.randint(1, 3)))
                if rng.random() < 0.3:
                    ignore.append('not-in-ring.example.com')
                if rng.random() < 0.2:
                    ignore.append(ignore[0])   # duplicate in ignore
        specs.append((key, ignore, replicas))
    return specs


def encode_key(key):
    try:
        text = key.decode('ascii')
        if text.isprintable():
            return {'key': text}
    except UnicodeDecodeError:
        pass
    return {'key_hex': key.hex()}


def make_ring(name, hosts, exponent, alg, specs):
    families = colliding_families(hosts, exponent)
    if families:
        ring = build(hosts, exponent, alg, order=sorted(set(hosts)))
    else:
        # Exactly what Ironic builds: HashRing(hosts, 2**exp, alg).
        ring = build(hosts, exponent, alg)
    assert len(ring) == expected_len(hosts, exponent), name
    rec = {'name': name, 'algorithm': alg, 'exponent': exponent,
           'hosts': hosts, 'len': len(ring),
           'ambiguous': bool(families), 'lookups': []}
    alt_rings = []
    if families:
        rec['families'] = families
        alt_rings = [build(hosts, exponent, alg, order=o)
                     for o in orders(hosts, families)]
        for alt in alt_rings:
            assert len(alt) == len(ring), name
    for key, ignore, replicas in specs:
        want = answer(ring, key, ignore, replicas)
        assert want is not None, (name, 'sorted order never hangs')
        lk = encode_key(key)
        lk.update({'ignore': ignore, 'replicas': replicas, 'want': want})
        if alt_rings:
            possible = []
            for alt in alt_rings:
                a = answer(alt, key, ignore, replicas)
                if a not in possible:
                    possible.append(a)
            if len(possible) > 1:
                possible.sort(key=lambda a: (a is None, a or []))
                lk['possible'] = possible
        rec['lookups'].append(lk)
    return rec


def collision_cases(rng):
    """Hand-picked rings whose hosts are powers of one word."""
    algs = [a for a in GUARANTEED if not a.startswith('shake_')]
    cases = [
        ('a+aa exp0 (no shared digest)', ['a', 'aa'], 0, 'md5'),
        ('a+aa exp1 (no shared digest)', ['a', 'aa'], 1, 'md5'),
        ('a+aa exp2', ['a', 'aa'], 2, 'md5'),
        ('a+aa exp5', ['aa', 'a'], 5, 'md5'),
        ('ab family', ['ab', 'abab'], 5, 'md5'),
        ('ab family of 3', ['ababab', 'ab', 'abab', 'conductor-1'], 3,
         'sha256'),
        ('a..aaaaa exp2 (tooz can hang)',
         ['a', 'aa', 'aaa', 'aaaa', 'aaaaa'], 2, 'md5'),
        ('u-umlaut family', ['ü', 'üü', 'üüü'], 4, 'blake2b'),
        ('aa+aaa exp3', ['aa', 'aaa', 'b'], 3, 'sha3_256'),
        ('abab+ababab exp7', ['abab', 'ababab'], 7, 'sha1'),
        ('two families', ['x', 'xx', 'yz', 'yzyz', 'host-1'], 4, 'sha512'),
        ('empty host', ['', 'conductor-1.example.com'], 3, 'md5'),
        ('empty host alone', [''], 5, 'blake2s'),
    ]
    base = sorted({hostname(rng) for _ in range(20)})
    cases.append(('host:6385 doubled in a crowd',
                  base + ['host:6385', 'host:6385host:6385'], 6, 'sha1'))
    cases.append(('c family exp10',
                  ['c', 'cc', 'ccc', 'conductor'], 10, 'sha384'))
    for i, alg in enumerate(algs):
        cases.append(('ab family %s' % alg,
                      ['ab', 'abab', 'ababab', 'cd'], 2 + i % 6, alg))
    out = []
    for name, hosts, exponent, alg in cases:
        maxrep = max(3, len(set(hosts)) + 1)
        specs = lookup_specs(rng, hosts, exponent, 120,
                             max_replicas=maxrep)
        out.append(make_ring('collision: ' + name, hosts, exponent, alg,
                             specs))
    return out


def random_cases(rng):
    algs = [a for a in GUARANTEED if not a.startswith('shake_')]
    plan = [(alg, e) for alg in algs for e in range(MAX_EXPONENT + 1)]
    for i in range(100):
        plan.append((algs[i % len(algs)], rng.randint(0, MAX_EXPONENT)))
    out = []
    for i, (alg, exponent) in enumerate(plan):
        count = host_count(rng)
        if i % 37 == 0:
            count = 300
        hosts = host_list(rng, count)
        specs = lookup_specs(rng, hosts, exponent, 90)
        out.append(make_ring('random %d' % i, hosts, exponent, alg, specs))
    return out


def error_cases():
    out = []
    for alg in GUARANTEED + UNKNOWN_NAMES:
        try:
            ring = build(['conductor-1', 'conductor-2'], 2, alg)
            ring.get_nodes(b'key')
        except Exception as exc:  # noqa: BLE001 - recording what tooz does
            msg = str(exc)
            # The ValueError lists a set in hash order: keep the stable part.
            msg = msg.split(' on this system')[0]
            out.append({'algorithm': alg, 'error': type(exc).__name__,
                        'message': msg})
    return out


# ------------------------------------------------- PYTHONHASHSEED cross-check

def worker():
    """Answer lookups with tooz's own HashRing(hosts) in this process."""
    job = json.load(sys.stdin)
    res = []
    for ring_rec in job:
        ring = build(ring_rec['hosts'], ring_rec['exponent'],
                     ring_rec['algorithm'])
        answers = []
        for lk in ring_rec['lookups']:
            key = (lk['key'].encode() if 'key' in lk
                   else bytes.fromhex(lk['key_hex']))
            answers.append(answer(ring, key, lk['ignore'], lk['replicas']))
        res.append(answers)
    json.dump(res, sys.stdout)


def cross_check(rings):
    amb = [r for r in rings if r['ambiguous']]
    if not amb:
        return
    variants = [set() for _ in amb]
    for seed in HASHSEEDS:
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        proc = subprocess.run([sys.executable, os.path.abspath(__file__),
                               '--worker'], input=json.dumps(amb),
                              capture_output=True, text=True, env=env,
                              check=True)
        for i, answers in enumerate(json.loads(proc.stdout)):
            for lk, got in zip(amb[i]['lookups'], answers):
                allowed = lk.get('possible', [lk['want']])
                if got not in allowed:
                    sys.exit('PYTHONHASHSEED=%d: %s: %r not in %r'
                             % (seed, amb[i]['name'], got, allowed))
            variants[i].add(json.dumps(answers))
    for ring_rec, seen in zip(amb, variants):
        ring_rec['hashseed_runs'] = len(HASHSEEDS)
        ring_rec['hashseed_distinct_answer_sets'] = len(seen)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), 'ring', 'testdata',
                               'vectors.json.gz')
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-o', '--output', default=default_out)
    parser.add_argument('--worker', action='store_true',
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker()
        return

    rng = random.Random(SEED)
    rings = collision_cases(rng) + random_cases(rng)
    cross_check(rings)
    errors = error_cases()
    doc = {
        'generator': 'scripts/gen-ring-vectors.py',
        'tooz_version': TOOZ_VERSION,
        'python_version': sys.version.split()[0],
        'seed': SEED,
        'algorithms_guaranteed': GUARANTEED,
        'algorithms_failing': errors,
        'rings': rings,
    }
    data = json.dumps(doc, ensure_ascii=False, sort_keys=True,
                      separators=(',', ':')).encode('utf-8')
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    with open(args.output, 'wb') as raw:
        with gzip.GzipFile(filename='', mode='wb', fileobj=raw, mtime=0,
                           compresslevel=9) as gz:
            gz.write(data)
    lookups = sum(len(r['lookups']) for r in rings)
    amb = [r for r in rings if r['ambiguous']]
    print('%s: tooz %s, %d rings, %d lookups, %d ambiguous rings '
          '(%d lookups with several possible answers), %d failing names'
          % (args.output, TOOZ_VERSION, len(rings), lookups, len(amb),
             sum('possible' in lk for r in amb for lk in r['lookups']),
             len(errors)))


if __name__ == '__main__':
    main()
