"""Splits a GGUF file into N shards the way llama.cpp's gguf-split does (tools/gguf-split):
shard k is a whole GGUF file named PREFIX-0000k-of-0000N.gguf holding its share of the tensor
infos and data; the first keeps every metadata key, and every shard carries split.no (u16, k-1),
split.count (u16, N) and split.tensors.count (i32, all tensors). For the remote-import tests: the
shards of a real file must import to the same bytes as the file."""

import struct

ALIGN_KEY = b"general.alignment"
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Reader:
    def __init__(self, data):
        self.d, self.p = data, 0

    def take(self, n):
        b = self.d[self.p:self.p + n]
        if len(b) != n:
            raise ValueError("truncated GGUF at byte %d" % self.p)
        self.p += n
        return b

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())

    def value(self, t):
        if t in SCALAR:
            return self.take(SCALAR[t])
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.u32(), self.u64()
            for _ in range(n):
                self.value(et)
            return None
        raise ValueError("unknown GGUF value type %d" % t)


def gguf_string(b):
    return struct.pack("<Q", len(b)) + b


def kv(key, t, payload):
    return gguf_string(key) + struct.pack("<I", t) + payload


def split(path, out_prefix, n):
    data = open(path, "rb").read()
    r = Reader(data)
    if r.take(4) != b"GGUF":
        raise ValueError(path + ": not a GGUF file")
    version, n_tensors, n_kv = r.u32(), r.u64(), r.u64()
    kvs, align = [], 32
    for _ in range(n_kv):
        start = r.p
        key = r.string()
        t = r.u32()
        v = r.value(t)
        if key == ALIGN_KEY:
            align = struct.unpack("<I", v)[0]
        kvs.append(data[start:r.p])
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.u64() for _ in range(r.u32())]
        ttype, offset = r.u32(), r.u64()
        tensors.append([name, dims, ttype, offset])
    data_start = (r.p + align - 1) // align * align
    ends = sorted(t[3] for t in tensors)[1:] + [len(data) - data_start]
    size_at = dict(zip(sorted(t[3] for t in tensors), ends))
    per = (len(tensors) + n - 1) // n
    names = []
    for k in range(n):
        mine = tensors[k * per:(k + 1) * per]
        meta = list(kvs) if k == 0 else []
        meta += [kv(b"split.no", 2, struct.pack("<H", k)), kv(b"split.count", 2, struct.pack("<H", n)),
                 kv(b"split.tensors.count", 5, struct.pack("<i", len(tensors)))]
        head = b"GGUF" + struct.pack("<IQQ", version, len(mine), len(meta)) + b"".join(meta)
        blob, offset = b"", 0
        for name, dims, ttype, old in mine:
            size = size_at[old] - old
            head += gguf_string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            head += struct.pack("<IQ", ttype, offset)
            chunk = data[data_start + old:data_start + old + size]
            pad = (-len(chunk)) % align
            blob += chunk + b"\0" * pad
            offset += len(chunk) + pad
        head += b"\0" * ((-len(head)) % align)
        name = "%s-%05d-of-%05d.gguf" % (out_prefix, k + 1, n)
        with open(name, "wb") as f:
            f.write(head + blob)
        names.append(name)
    return names
