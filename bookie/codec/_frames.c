/*
 * bookie.codec._frames: the per-frame work of BookKeeper's protocol for the common frames, in C.
 *
 * What it does, bookie/codec/frames.py says (the interface, and the Python that runs when this is not built).
 * In short: plain adds and reads, v3 and v2, are cut from a connection's buffer and decoded here, and their answers
 * encoded here, producing exactly what bookie/codec/wire.py does for them (tests/unit/codec/test_frames.py compares
 * both on generated and mutated frames). Anything else (another operation, a field these do not expect, a field
 * twice, an enum value they do not know) is left to wire.py: a scan stops before such a frame with STOP_OTHER.
 *
 * Safety: every read is bounds-checked against the frame it belongs to; a length from the network is compared with
 * the bytes left before it is used; nothing is written outside the buffers allocated here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define KIND_ADD 1
#define KIND_READ 2
#define KIND_ADDS 3 /* a run of adds (requests) */

#define STOP_END 0      /* no complete frame left at the offset */
#define STOP_OTHER 1    /* the frame at the offset is complete but not one of these: wire.py decodes it */
#define STOP_NEGATIVE 2 /* the length at the offset is negative */
#define STOP_TOO_LARGE 3 /* the frame at the offset is above the maximum frame size */

/* v3 enum values (bookkeeper_protocol.proto) */
#define VERSION_THREE 3
#define OP_READ_ENTRY 1
#define OP_ADD_ENTRY 2
#define HIGH_PRIORITY 100

/* v2 (BookieProtocol) */
#define V2_ADDENTRY 1
#define V2_READENTRY 2
#define V2_FLAG_DO_FENCING 0x1
#define V2_FLAG_RECOVERY_ADD 0x2
#define V2_FLAG_HIGH_PRIORITY 0x4
#define V2_ADD_HEADER ((2 << 24) | (V2_ADDENTRY << 16)) /* packet header of a version-2 ADDENTRY, no flags */
#define MASTER_KEY_LENGTH 20

/* ---- v3 status codes <-> v2 return codes (wire.V2_TO_V3_STATUS) ---- */

static const int V2_CODES[] = {0, 1, 2, 100, 101, 102, 103, 104, 105, 106, 107};
static const int V3_CODES[] = {0, 402, 403, 404, 501, 502, 503, 504, 505, 506, 507};
#define N_CODES ((int)(sizeof(V2_CODES) / sizeof(V2_CODES[0])))

static int v3_known(uint64_t status) {
    for (int i = 0; i < N_CODES; i++)
        if ((uint64_t)V3_CODES[i] == status)
            return 1;
    return 0;
}

static int v2_of_v3(long status, int *out) {
    for (int i = 0; i < N_CODES; i++)
        if (V3_CODES[i] == status) {
            *out = V2_CODES[i];
            return 1;
        }
    return 0;
}

static int v3_of_v2(int32_t rc, int *out) {
    for (int i = 0; i < N_CODES; i++)
        if (V2_CODES[i] == rc) {
            *out = V3_CODES[i];
            return 1;
        }
    return 0;
}

/* ---- reading ---- */

static int32_t be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

static int64_t be64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return (int64_t)v;
}

/* A varint at *pos, below end; 0 if it runs past end or over 10 bytes. */
static int read_varint(const unsigned char *p, Py_ssize_t end, Py_ssize_t *pos, uint64_t *out) {
    uint64_t v = 0;
    Py_ssize_t i = *pos;
    for (int shift = 0; shift < 70 && i < end; shift += 7) {
        unsigned char b = p[i++];
        if (shift < 64)
            v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *pos = i;
            *out = v;
            return 1;
        }
    }
    return 0;
}

typedef struct {
    int present;
    uint64_t value;     /* a varint field */
    Py_ssize_t offset;  /* a length-delimited field: where its bytes start */
    Py_ssize_t length;
} Slot;

#define VARINT 0
#define LEN 2
#define MAX_FIELDS 8

/* The fields of the message in [start, end): each must be one of `numbers`, with its wire type, at most once.
 * 0 for anything else (an unknown field, a wrong wire type, a field twice, bytes cut short). */
static int walk(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, const int *numbers, const int *wires, int n,
                Slot *slots) {
    memset(slots, 0, sizeof(Slot) * n);
    Py_ssize_t pos = start;
    while (pos < end) {
        uint64_t tag;
        if (!read_varint(p, end, &pos, &tag))
            return 0;
        uint64_t number = tag >> 3;
        int wire = (int)(tag & 7);
        int i = 0;
        while (i < n && (uint64_t)numbers[i] != number)
            i++;
        if (i == n || wires[i] != wire || slots[i].present)
            return 0;
        slots[i].present = 1;
        if (wire == VARINT) {
            if (!read_varint(p, end, &pos, &slots[i].value))
                return 0;
        } else {
            uint64_t length;
            if (!read_varint(p, end, &pos, &length) || length > (uint64_t)(end - pos))
                return 0;
            slots[i].offset = pos;
            slots[i].length = (Py_ssize_t)length;
            pos += (Py_ssize_t)length;
        }
    }
    return 1;
}

/* BKPacketHeader: version, operation, txnId (required), priority. 1 when it is a v3 header of `operation`. */
static int header_of(const unsigned char *p, Slot *at, int operation, uint64_t *txn, uint32_t *priority) {
    static const int numbers[] = {1, 2, 3, 4};
    static const int wires[] = {VARINT, VARINT, VARINT, VARINT};
    Slot s[4];
    if (!walk(p, at->offset, at->offset + at->length, numbers, wires, 4, s))
        return 0;
    if (!s[0].present || !s[1].present || !s[2].present)
        return 0;
    if (s[0].value != VERSION_THREE || s[1].value != (uint64_t)operation)
        return 0;
    *txn = s[2].value;
    *priority = s[3].present ? (uint32_t)s[3].value : 0;
    return 1;
}

/* ---- writing ---- */

static Py_ssize_t varint_size(uint64_t v) {
    Py_ssize_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_varint(unsigned char *q, uint64_t v) {
    while (v >= 0x80) {
        *q++ = (unsigned char)((v & 0x7F) | 0x80);
        v >>= 7;
    }
    *q++ = (unsigned char)v;
    return q;
}

static unsigned char *put_be32(unsigned char *q, int32_t v) {
    uint32_t u = (uint32_t)v;
    q[0] = (unsigned char)(u >> 24);
    q[1] = (unsigned char)(u >> 16);
    q[2] = (unsigned char)(u >> 8);
    q[3] = (unsigned char)u;
    return q + 4;
}

static unsigned char *put_be64(unsigned char *q, int64_t v) {
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--) {
        q[i] = (unsigned char)u;
        u >>= 8;
    }
    return q + 8;
}

/* ---- scanning a buffer ---- */

/* A scan's arguments (buffer, offset, max frame size): -1 (an error set, nothing held) when they are not. */
static int scan_args(PyObject *args, Py_buffer *view, Py_ssize_t *offset, Py_ssize_t *max_frame_size) {
    if (!PyArg_ParseTuple(args, "y*nn", view, offset, max_frame_size))
        return -1;
    if (*offset < 0 || *offset > view->len) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "offset outside the buffer");
        return -1;
    }
    return 0;
}

/* The length of the complete frame at `offset`; -1 when there is none to take, with *stop why: STOP_END (cut short
 * or nothing left), STOP_NEGATIVE or STOP_TOO_LARGE. */
static Py_ssize_t frame_length(const unsigned char *p, Py_ssize_t offset, Py_ssize_t end, Py_ssize_t max_frame_size,
                               int *stop) {
    *stop = STOP_END;
    if (end - offset < 4)
        return -1;
    int32_t length = be32(p + offset);
    if (length < 0)
        *stop = STOP_NEGATIVE;
    else if ((Py_ssize_t)length + 4 > max_frame_size)
        *stop = STOP_TOO_LARGE;
    else if (end - offset - 4 >= (Py_ssize_t)length)
        return length;
    return -1;
}

typedef PyObject *(*FrameDecoder)(const unsigned char *p, Py_ssize_t start, Py_ssize_t end);

/* Cut frames from `buffer` at `offset` and decode each with `decode` (NULL: not one of ours) until one is not, or
 * none is complete: (offset reached, [items], stop). */
static PyObject *scan(PyObject *args, FrameDecoder decode) {
    Py_buffer view;
    Py_ssize_t offset, max_frame_size, length;
    int stop;
    if (scan_args(args, &view, &offset, &max_frame_size) < 0)
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    PyObject *items = PyList_New(0);
    if (items == NULL)
        goto failed;
    while ((length = frame_length(p, offset, view.len, max_frame_size, &stop)) >= 0) {
        PyObject *item = decode(p, offset + 4, offset + 4 + length);
        if (item == NULL) {
            if (PyErr_Occurred())
                goto failed;
            stop = STOP_OTHER;
            break;
        }
        int failed = PyList_Append(items, item);
        Py_DECREF(item);
        if (failed)
            goto failed;
        offset += 4 + length;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("nNi", offset, items, stop);
failed:
    PyBuffer_Release(&view);
    Py_XDECREF(items);
    return NULL;
}

/* ---- requests (the bookie's): plain adds and reads, each run of adds as one item ---- */

/* A plain add or read, as decoded: where its key and entry are in the buffer, not copies. */
typedef struct {
    int kind; /* KIND_ADD or KIND_READ */
    int v3;   /* it has a txnId (v2 has none) */
    uint64_t txn;
    int64_t ledger_id, entry_id;
    Py_ssize_t key_at, key_length; /* an add's masterKey */
    int recovery, high;
    long deferred;
    Py_ssize_t entry_at, entry_length; /* an add's framed entry */
} Request;

/* 1 when the frame body in [start, end) is a plain add or read (into *r); 0 for any other. */
typedef int (*RequestDecoder)(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, Request *r);

static int v3_request(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, Request *r) {
    static const int numbers[] = {1, 100, 101};
    static const int wires[] = {LEN, LEN, LEN};
    Slot s[3];
    uint32_t priority;
    if (!walk(p, start, end, numbers, wires, 3, s) || !s[0].present || s[1].present == s[2].present)
        return 0;
    r->v3 = 1;
    if (s[2].present) { /* AddRequest: flag=100, ledgerId=1, entryId=2, masterKey=3, body=4, writeFlags=5 */
        static const int add_numbers[] = {100, 1, 2, 3, 4, 5};
        static const int add_wires[] = {VARINT, VARINT, VARINT, LEN, LEN, VARINT};
        Slot a[6];
        if (!header_of(p, &s[0], OP_ADD_ENTRY, &r->txn, &priority))
            return 0;
        if (!walk(p, s[2].offset, s[2].offset + s[2].length, add_numbers, add_wires, 6, a))
            return 0;
        if (!a[1].present || !a[2].present || !a[3].present || !a[4].present)
            return 0;
        if (a[0].present && a[0].value != 1) /* RECOVERY_ADD is the only value */
            return 0;
        r->kind = KIND_ADD;
        r->ledger_id = (int64_t)a[1].value;
        r->entry_id = (int64_t)a[2].value;
        r->key_at = a[3].offset;
        r->key_length = a[3].length;
        r->recovery = a[0].present;
        r->deferred = (long)(a[5].present ? (a[5].value & 1) : 0);
        r->entry_at = a[4].offset;
        r->entry_length = a[4].length;
        r->high = priority >= HIGH_PRIORITY;
        return 1;
    }
    /* ReadRequest, plain: ledgerId=1, entryId=2, masterKey=3 (not looked at), flag=100 only ENTRY_PIGGYBACK */
    static const int read_numbers[] = {100, 1, 2, 3};
    static const int read_wires[] = {VARINT, VARINT, VARINT, LEN};
    Slot q[4];
    if (!header_of(p, &s[0], OP_READ_ENTRY, &r->txn, &priority))
        return 0;
    if (!walk(p, s[1].offset, s[1].offset + s[1].length, read_numbers, read_wires, 4, q))
        return 0;
    if (!q[1].present || !q[2].present || (q[0].present && q[0].value != 2))
        return 0;
    r->kind = KIND_READ;
    r->ledger_id = (int64_t)q[1].value;
    r->entry_id = (int64_t)q[2].value;
    return 1;
}

/* The packet header of a v2 body: 0 when it is cut short. */
static int v2_header(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, int *version, int *opcode,
                     int *flags) {
    if (end - start < 4)
        return 0;
    int32_t header = be32(p + start);
    *version = (int)(int8_t)(header >> 24);
    if (*version == 0) {
        *opcode = header & 0xFF;
        *flags = 0;
    } else {
        *opcode = (header >> 16) & 0xFF;
        *flags = header & 0xFFFF;
    }
    return 1;
}

static int v2_request(const unsigned char *p, Py_ssize_t start, Py_ssize_t end, Request *r) {
    int version, opcode, flags;
    if (!v2_header(p, start, end, &version, &opcode, &flags))
        return 0;
    r->v3 = 0;
    if (opcode == V2_ADDENTRY) {
        Py_ssize_t ids = start + 4 + MASTER_KEY_LENGTH;
        if (end - ids < 16)
            return 0;
        r->kind = KIND_ADD;
        r->ledger_id = be64(p + ids);
        r->entry_id = be64(p + ids + 8);
        r->key_at = start + 4;
        r->key_length = MASTER_KEY_LENGTH;
        r->recovery = (flags & V2_FLAG_RECOVERY_ADD) != 0;
        r->deferred = 0;
        r->entry_at = ids;
        r->entry_length = end - ids;
        r->high = (flags & V2_FLAG_HIGH_PRIORITY) != 0;
        return 1;
    }
    if (opcode == V2_READENTRY) {
        if (end - start < 4 + 16 || ((flags & V2_FLAG_DO_FENCING) && version >= 2))
            return 0;
        r->kind = KIND_READ;
        r->ledger_id = be64(p + start + 4);
        r->entry_id = be64(p + start + 12);
        return 1;
    }
    return 0;
}

/* A run of adds: consecutive adds of one priority, with one key per ledger, of RUN_LEDGERS ledgers at most. */
#define RUN_LEDGERS 16

typedef struct {
    Request *adds;
    Py_ssize_t n, capacity;
    Py_ssize_t keys[RUN_LEDGERS]; /* the first add of each ledger (an index in adds): its key is the ledger's */
    int n_keys;
    Py_ssize_t size; /* of the records */
} Run;

static int same_key(const unsigned char *p, const Request *a, const Request *b) {
    return a->key_length == b->key_length && a->recovery == b->recovery && a->deferred == b->deferred &&
           memcmp(p + a->key_at, p + b->key_at, (size_t)a->key_length) == 0;
}

/* Whether `r` may join the run (an empty run takes any add). */
static int run_takes(const Run *run, const unsigned char *p, const Request *r) {
    if (run->n == 0)
        return 1;
    if (r->high != run->adds[0].high)
        return 0;
    for (int i = 0; i < run->n_keys; i++)
        if (run->adds[run->keys[i]].ledger_id == r->ledger_id)
            return same_key(p, &run->adds[run->keys[i]], r);
    return run->n_keys < RUN_LEDGERS;
}

static int run_add(Run *run, const Request *r) {
    if (run->n == run->capacity) {
        Py_ssize_t capacity = run->capacity ? 2 * run->capacity : 64;
        Request *adds = PyMem_Realloc(run->adds, (size_t)capacity * sizeof(Request));
        if (adds == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        run->adds = adds;
        run->capacity = capacity;
    }
    int known = 0;
    for (int i = 0; i < run->n_keys && !known; i++)
        known = run->adds[run->keys[i]].ledger_id == r->ledger_id;
    if (!known)
        run->keys[run->n_keys++] = run->n;
    run->adds[run->n++] = *r;
    run->size += 4 + r->entry_length;
    return 0;
}

static PyObject *txn_of(const Request *r) {
    if (r->v3)
        return PyLong_FromUnsignedLongLong(r->txn);
    Py_INCREF(Py_None);
    return Py_None;
}

/* (ADDS, [(txnId or None, ledgerId, entryId), ...], {ledgerId: (masterKey, recovery, deferred sync)}, records,
 * high priority), the records being the storage record of each entry, one after the other. */
static PyObject *run_item(const Run *run, const unsigned char *p) {
    PyObject *answers = NULL, *keys = NULL, *records = NULL;
    if (run->size > PY_SSIZE_T_MAX - 4) {
        PyErr_SetString(PyExc_ValueError, "adds too large");
        return NULL;
    }
    if ((answers = PyList_New(run->n)) == NULL || (keys = PyDict_New()) == NULL ||
        (records = PyBytes_FromStringAndSize(NULL, run->size)) == NULL)
        goto failed;
    unsigned char *q = (unsigned char *)PyBytes_AS_STRING(records);
    for (Py_ssize_t i = 0; i < run->n; i++) {
        const Request *r = &run->adds[i];
        PyObject *answer = PyTuple_New(3);
        if (answer == NULL)
            goto failed;
        PyList_SET_ITEM(answers, i, answer);
        PyObject *txn = txn_of(r);
        PyObject *ledger = PyLong_FromLongLong((long long)r->ledger_id);
        PyObject *entry = PyLong_FromLongLong((long long)r->entry_id);
        PyTuple_SET_ITEM(answer, 0, txn); /* NULL until set: the tuple's dealloc takes that */
        PyTuple_SET_ITEM(answer, 1, ledger);
        PyTuple_SET_ITEM(answer, 2, entry);
        if (txn == NULL || ledger == NULL || entry == NULL)
            goto failed;
        q = put_be32(q, (int32_t)r->entry_length); /* a frame's length is an int32: so is an entry's */
        memcpy(q, p + r->entry_at, (size_t)r->entry_length);
        q += r->entry_length;
    }
    for (int k = 0; k < run->n_keys; k++) {
        const Request *r = &run->adds[run->keys[k]];
        PyObject *ledger = PyLong_FromLongLong((long long)r->ledger_id);
        PyObject *key = Py_BuildValue("(y#Nl)", p + r->key_at, r->key_length, PyBool_FromLong(r->recovery),
                                      r->deferred);
        int failed = ledger == NULL || key == NULL || PyDict_SetItem(keys, ledger, key) < 0;
        Py_XDECREF(ledger);
        Py_XDECREF(key);
        if (failed)
            goto failed;
    }
    return Py_BuildValue("(iNNNN)", KIND_ADDS, answers, keys, records, PyBool_FromLong(run->adds[0].high));
failed:
    Py_XDECREF(answers);
    Py_XDECREF(keys);
    Py_XDECREF(records);
    return NULL;
}

/* Append the run (if any) to `items` as one item and empty it: -1 on an error. */
static int run_flush(Run *run, const unsigned char *p, PyObject *items) {
    if (run->n == 0)
        return 0;
    PyObject *item = run_item(run, p);
    run->n = run->n_keys = 0;
    run->size = 0;
    if (item == NULL)
        return -1;
    int failed = PyList_Append(items, item);
    Py_DECREF(item);
    return failed;
}

/* scan() for requests: reads one item each, (READ, txnId or None, ledgerId, entryId); each run of adds one item. */
static PyObject *scan_requests(PyObject *args, RequestDecoder decode) {
    Py_buffer view;
    Py_ssize_t offset, max_frame_size, length;
    int stop;
    if (scan_args(args, &view, &offset, &max_frame_size) < 0)
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    PyObject *items = PyList_New(0);
    Run run = {0};
    if (items == NULL)
        goto failed;
    while ((length = frame_length(p, offset, view.len, max_frame_size, &stop)) >= 0) {
        Request r;
        if (!decode(p, offset + 4, offset + 4 + length, &r)) {
            stop = STOP_OTHER;
            break;
        }
        if (r.kind == KIND_ADD) {
            if ((!run_takes(&run, p, &r) && run_flush(&run, p, items) < 0) || run_add(&run, &r) < 0)
                goto failed;
        } else {
            if (run_flush(&run, p, items) < 0)
                goto failed;
            PyObject *item = Py_BuildValue("(iNLL)", KIND_READ, txn_of(&r), (long long)r.ledger_id,
                                           (long long)r.entry_id);
            int failed = item == NULL || PyList_Append(items, item) < 0;
            Py_XDECREF(item);
            if (failed)
                goto failed;
        }
        offset += 4 + length;
    }
    if (run_flush(&run, p, items) < 0)
        goto failed;
    PyMem_Free(run.adds);
    PyBuffer_Release(&view);
    return Py_BuildValue("nNi", offset, items, stop);
failed:
    PyMem_Free(run.adds);
    PyBuffer_Release(&view);
    Py_XDECREF(items);
    return NULL;
}

static PyObject *scan_requests_v3(PyObject *self, PyObject *args) { return scan_requests(args, v3_request); }
static PyObject *scan_requests_v2(PyObject *self, PyObject *args) { return scan_requests(args, v2_request); }

/* frames.ResponseItem (a NamedTuple), given once by set_response_item: the response items are built as its
 * instances. Until then (or with None) they are plain tuples. */
static PyTypeObject *response_item_type = NULL;

static PyObject *set_response_item(PyObject *self, PyObject *type) {
    if (type != Py_None && !(PyType_Check(type) && PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type))) {
        PyErr_SetString(PyExc_TypeError, "a subclass of tuple, or None");
        return NULL;
    }
    Py_XSETREF(response_item_type, type == Py_None ? NULL : (PyTypeObject *)Py_NewRef(type));
    Py_RETURN_NONE;
}

/* A response item (kind, key, status, entry, maxLAC); it takes the references to key and entry (either NULL: the
 * error of making it, returned as NULL). */
static PyObject *response_item(int kind, PyObject *key, long long status, PyObject *entry, long long max_lac) {
    PyObject *item = NULL, *k = PyLong_FromLong(kind), *s = PyLong_FromLongLong(status);
    PyObject *m = PyLong_FromLongLong(max_lac);
    if (key != NULL && entry != NULL && k != NULL && s != NULL && m != NULL)
        item = response_item_type == NULL ? PyTuple_New(5) : response_item_type->tp_alloc(response_item_type, 5);
    if (item == NULL) {
        Py_XDECREF(key);
        Py_XDECREF(entry);
        Py_XDECREF(k);
        Py_XDECREF(s);
        Py_XDECREF(m);
        return NULL;
    }
    PyTuple_SET_ITEM(item, 0, k);
    PyTuple_SET_ITEM(item, 1, key);
    PyTuple_SET_ITEM(item, 2, s);
    PyTuple_SET_ITEM(item, 3, entry);
    PyTuple_SET_ITEM(item, 4, m);
    return item;
}

static PyObject *bytes_of(const unsigned char *p, Py_ssize_t length) {
    return PyBytes_FromStringAndSize((const char *)p, length);
}

/* A v3 Response that answers an add or a plain read: (KIND_ADD, txn, status, None, -1) or
 * (KIND_READ, txn, status, body, maxLAC or -1); NULL (no error) for any other. */
static PyObject *v3_response(const unsigned char *p, Py_ssize_t start, Py_ssize_t end) {
    static const int numbers[] = {1, 2, 100, 101};
    static const int wires[] = {LEN, VARINT, LEN, LEN};
    Slot s[4];
    uint64_t txn;
    uint32_t priority;
    if (!walk(p, start, end, numbers, wires, 4, s) || !s[0].present || !s[1].present || !v3_known(s[1].value))
        return NULL;
    if (s[2].present && s[3].present)
        return NULL;
    uint64_t status = s[1].value;
    if (!s[2].present) { /* an add's answer, or a bare status: the header says which */
        if (!header_of(p, &s[0], OP_ADD_ENTRY, &txn, &priority)) {
            if (s[3].present || !header_of(p, &s[0], OP_READ_ENTRY, &txn, &priority))
                return NULL;
            return response_item(KIND_READ, PyLong_FromUnsignedLongLong(txn), (long long)status, bytes_of(p, 0),
                                 -1);
        }
        if (s[3].present) { /* AddResponse: status=1, ledgerId=2, entryId=3, all required */
            static const int add_numbers[] = {1, 2, 3};
            static const int add_wires[] = {VARINT, VARINT, VARINT};
            Slot a[3];
            if (!walk(p, s[3].offset, s[3].offset + s[3].length, add_numbers, add_wires, 3, a))
                return NULL;
            if (!a[0].present || !a[1].present || !a[2].present || !v3_known(a[0].value))
                return NULL;
            status = a[0].value;
        }
        return response_item(KIND_ADD, PyLong_FromUnsignedLongLong(txn), (long long)status, Py_NewRef(Py_None), -1);
    }
    /* ReadResponse: status=1, ledgerId=2, entryId=3 (required), body=4, maxLAC=5, lacUpdateTimestamp=6 */
    static const int read_numbers[] = {1, 2, 3, 4, 5, 6};
    static const int read_wires[] = {VARINT, VARINT, VARINT, LEN, VARINT, VARINT};
    Slot r[6];
    if (!header_of(p, &s[0], OP_READ_ENTRY, &txn, &priority))
        return NULL;
    if (!walk(p, s[2].offset, s[2].offset + s[2].length, read_numbers, read_wires, 6, r))
        return NULL;
    if (!r[0].present || !r[1].present || !r[2].present || !v3_known(r[0].value))
        return NULL;
    return response_item(KIND_READ, PyLong_FromUnsignedLongLong(txn), (long long)r[0].value,
                         bytes_of(p + r[3].offset, r[3].present ? r[3].length : 0),
                         r[4].present ? (long long)(int64_t)r[4].value : -1);
}

/* A v2 answer to an add or a read: (KIND_ADD, (1, ledgerId, entryId), status, None, -1) or
 * (KIND_READ, (2, ledgerId, entryId), status, entry, -1), status in v3 numbering; NULL (no error) for any other. */
static PyObject *v2_response(const unsigned char *p, Py_ssize_t start, Py_ssize_t end) {
    int version, opcode, flags, status;
    if (!v2_header(p, start, end, &version, &opcode, &flags))
        return NULL;
    if ((opcode != V2_ADDENTRY && opcode != V2_READENTRY) || end - start < 24)
        return NULL;
    if (!v3_of_v2(be32(p + start + 4), &status))
        return NULL;
    long long ledger_id = (long long)be64(p + start + 8), entry_id = (long long)be64(p + start + 16);
    if (opcode == V2_ADDENTRY)
        return response_item(KIND_ADD, Py_BuildValue("(iLL)", V2_ADDENTRY, ledger_id, entry_id), status,
                             Py_NewRef(Py_None), -1);
    return response_item(KIND_READ, Py_BuildValue("(iLL)", V2_READENTRY, ledger_id, entry_id), status,
                         bytes_of(p + start + 24, end - start - 24), -1);
}

static PyObject *scan_responses_v3(PyObject *self, PyObject *args) { return scan(args, v3_response); }
static PyObject *scan_responses_v2(PyObject *self, PyObject *args) { return scan(args, v2_response); }

/* ---- encoding ---- */

/* An int argument as 64 bits: int64 (ledger and entry ids, LACs; negative as two's complement, as protobuf's
 * varint of an int64), or uint64 for txnIds. -1 with an error set when it is neither. */
static int as_u64(PyObject *number, uint64_t *out) {
    long long signed_value = PyLong_AsLongLong(number);
    if (signed_value == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        unsigned long long unsigned_value = PyLong_AsUnsignedLongLong(number);
        if (unsigned_value == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        *out = (uint64_t)unsigned_value;
        return 0;
    }
    *out = (uint64_t)signed_value;
    return 0;
}

/* The v3 header of an answer or request: BKPacketHeader{VERSION_THREE, operation, txnId}. */
static unsigned char *put_header(unsigned char *q, int operation, uint64_t txn, Py_ssize_t header_size) {
    *q++ = 0x0a;
    *q++ = (unsigned char)header_size;
    *q++ = 0x08;
    *q++ = VERSION_THREE;
    *q++ = 0x10;
    *q++ = (unsigned char)operation;
    *q++ = 0x18;
    return put_varint(q, txn);
}

/* add_responses(answers, statuses) -> bytes: each (txnId or None for v2, ledgerId, entryId) with its v3 status */
static PyObject *add_responses(PyObject *self, PyObject *args) {
    PyObject *answers, *statuses;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &answers, &PyList_Type, &statuses))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(answers);
    if (PyList_GET_SIZE(statuses) != n) {
        PyErr_SetString(PyExc_ValueError, "as many statuses as answers");
        return NULL;
    }
    /* the largest v3 answer: 4 + 2 + 7 + 10 (txn) + 2 + 3 + 2 + 3 + 3 * 10 < 80; a v2 answer is 28 bytes */
    if (n > PY_SSIZE_T_MAX / 80) {
        PyErr_NoMemory();
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 80);
    if (out == NULL)
        return NULL;
    unsigned char *start = (unsigned char *)PyBytes_AS_STRING(out), *q = start;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *answer = PyList_GET_ITEM(answers, i);
        if (!PyTuple_Check(answer) || PyTuple_GET_SIZE(answer) != 3) {
            PyErr_SetString(PyExc_TypeError, "an answer is (txnId, ledgerId, entryId)");
            goto fail;
        }
        long status = PyLong_AsLong(PyList_GET_ITEM(statuses, i));
        uint64_t ledger_id, entry_id, txn;
        if ((status == -1 && PyErr_Occurred()) || as_u64(PyTuple_GET_ITEM(answer, 1), &ledger_id) < 0 ||
            as_u64(PyTuple_GET_ITEM(answer, 2), &entry_id) < 0)
            goto fail;
        PyObject *txn_id = PyTuple_GET_ITEM(answer, 0);
        if (txn_id == Py_None) { /* v2: length 24 | header | rc | ledgerId | entryId */
            int rc;
            if (!v2_of_v3(status, &rc)) {
                PyErr_Format(PyExc_ValueError, "unknown v3 status code %ld", status);
                goto fail;
            }
            q = put_be32(q, 24);
            q = put_be32(q, V2_ADD_HEADER);
            q = put_be32(q, rc);
            q = put_be64(q, (int64_t)ledger_id);
            q = put_be64(q, (int64_t)entry_id);
            continue;
        }
        if (as_u64(txn_id, &txn) < 0)
            goto fail;
        if (status < 0) {
            PyErr_Format(PyExc_ValueError, "unknown v3 status code %ld", status);
            goto fail;
        }
        Py_ssize_t header_size = 5 + varint_size(txn), code_size = varint_size((uint64_t)status);
        Py_ssize_t add_size = 3 + code_size + varint_size(ledger_id) + varint_size(entry_id);
        Py_ssize_t body = 2 + header_size + 1 + code_size + 2 + 1 + add_size;
        q = put_be32(q, (int32_t)body);
        q = put_header(q, OP_ADD_ENTRY, txn, header_size);
        *q++ = 0x10;
        q = put_varint(q, (uint64_t)status);
        *q++ = 0xaa; /* field 101, addResponse */
        *q++ = 0x06;
        *q++ = (unsigned char)add_size;
        *q++ = 0x08;
        q = put_varint(q, (uint64_t)status);
        *q++ = 0x10;
        q = put_varint(q, ledger_id);
        *q++ = 0x18;
        q = put_varint(q, entry_id);
    }
    if (_PyBytes_Resize(&out, q - start) < 0)
        return NULL;
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* read_response_v3(txn, status, ledgerId, entryId, body or None, maxLAC or None) -> bytes (wire.read_response_v3) */
static PyObject *read_response_v3(PyObject *self, PyObject *args) {
    PyObject *txn_id, *ledger, *entry, *body, *lac;
    long status;
    if (!PyArg_ParseTuple(args, "OlOOOO", &txn_id, &status, &ledger, &entry, &body, &lac))
        return NULL;
    uint64_t txn, ledger_id, entry_id, max_lac = 0;
    if (as_u64(txn_id, &txn) < 0 || as_u64(ledger, &ledger_id) < 0 || as_u64(entry, &entry_id) < 0 ||
        (lac != Py_None && as_u64(lac, &max_lac) < 0))
        return NULL;
    if (status < 0) {
        PyErr_Format(PyExc_ValueError, "unknown v3 status code %ld", status);
        return NULL;
    }
    Py_buffer view = {0};
    int has_body = body != Py_None;
    if (has_body && PyObject_GetBuffer(body, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t length = has_body ? view.len : 0;
    Py_ssize_t header_size = 5 + varint_size(txn), code_size = varint_size((uint64_t)status);
    Py_ssize_t read_size = 3 + code_size + varint_size(ledger_id) + varint_size(entry_id);
    if (has_body)
        read_size += 1 + varint_size((uint64_t)length) + length;
    if (lac != Py_None)
        read_size += 1 + varint_size(max_lac);
    Py_ssize_t size = 2 + header_size + 1 + code_size + 2 + varint_size((uint64_t)read_size) + read_size;
    if (size > INT32_MAX) {
        if (has_body)
            PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "entry too large");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 + size);
    if (out == NULL) {
        if (has_body)
            PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char *q = (unsigned char *)PyBytes_AS_STRING(out);
    q = put_be32(q, (int32_t)size);
    q = put_header(q, OP_READ_ENTRY, txn, header_size);
    *q++ = 0x10;
    q = put_varint(q, (uint64_t)status);
    *q++ = 0xa2; /* field 100, readResponse */
    *q++ = 0x06;
    q = put_varint(q, (uint64_t)read_size);
    *q++ = 0x08;
    q = put_varint(q, (uint64_t)status);
    *q++ = 0x10;
    q = put_varint(q, ledger_id);
    *q++ = 0x18;
    q = put_varint(q, entry_id);
    if (has_body) {
        *q++ = 0x22;
        q = put_varint(q, (uint64_t)length);
        memcpy(q, view.buf, (size_t)length);
        q += length;
        PyBuffer_Release(&view);
    }
    if (lac != Py_None) {
        *q++ = 0x28;
        q = put_varint(q, max_lac);
    }
    return out;
}

/* An add to frame: its ids and fields, and the sizes of its frame: for v3 (wire.add_request_v3) its header, its
 * AddRequest and the whole frame after its length; for v2 only the last. */
typedef struct {
    uint64_t txn, ledger_id, entry_id;
    Py_ssize_t key_length, length; /* of the masterKey and the body */
    int recovery;
    Py_ssize_t header_size, add_size, size;
} AddFrame;

/* Fill in the sizes of *f (its other fields set): -1 (ValueError) when the frame would pass an int32. */
static int add_frame_sizes(AddFrame *f) {
    f->header_size = 5 + varint_size(f->txn) + (f->recovery ? 2 : 0);
    f->add_size = 1 + varint_size(f->ledger_id) + 1 + varint_size(f->entry_id) + 1 +
                  varint_size((uint64_t)f->key_length) + f->key_length + 1 + varint_size((uint64_t)f->length) +
                  f->length + (f->recovery ? 3 : 0);
    f->size = 2 + f->header_size + 2 + varint_size((uint64_t)f->add_size) + f->add_size;
    if (f->size > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "entry too large");
        return -1;
    }
    return 0;
}

/* Write the frame of *f at q: where it ends. */
static unsigned char *put_add_frame(unsigned char *q, const AddFrame *f, const void *key, const void *body) {
    q = put_be32(q, (int32_t)f->size);
    q = put_header(q, OP_ADD_ENTRY, f->txn, f->header_size);
    if (f->recovery) {
        *q++ = 0x20; /* priority 100 */
        *q++ = HIGH_PRIORITY;
    }
    *q++ = 0xaa; /* field 101, addRequest */
    *q++ = 0x06;
    q = put_varint(q, (uint64_t)f->add_size);
    *q++ = 0x08;
    q = put_varint(q, f->ledger_id);
    *q++ = 0x10;
    q = put_varint(q, f->entry_id);
    *q++ = 0x1a;
    q = put_varint(q, (uint64_t)f->key_length);
    memcpy(q, key, (size_t)f->key_length);
    q += f->key_length;
    *q++ = 0x22;
    q = put_varint(q, (uint64_t)f->length);
    memcpy(q, body, (size_t)f->length);
    q += f->length;
    if (f->recovery) {
        *q++ = 0xa0; /* field 100, flag = RECOVERY_ADD */
        *q++ = 0x06;
        *q++ = 0x01;
    }
    return q;
}

/* A v2 ADDENTRY frame (wire.add_request_v2_head, then the entry): its length, its packet header (version 2,
 * ADDENTRY, a recovery add's RECOVERY_ADD | HIGH_PRIORITY flags), the 20-byte masterKey, the entry. */
static unsigned char *put_add_frame_v2(unsigned char *q, const AddFrame *f, const void *key, const void *body) {
    q = put_be32(q, (int32_t)f->size);
    q = put_be32(q, V2_ADD_HEADER | (f->recovery ? V2_FLAG_RECOVERY_ADD | V2_FLAG_HIGH_PRIORITY : 0));
    memcpy(q, key, MASTER_KEY_LENGTH);
    q += MASTER_KEY_LENGTH;
    memcpy(q, body, (size_t)f->length);
    return q + f->length;
}

/* add_requests_v3/_v2([(txn, ledgerId, entryId, masterKey, record, recovery), ...]) -> bytes: the add request of
 * each record's entry (a record: its size, then the entry), one after the other: the client's adds to one bookie
 * in one turn of its event loop, in one write (v2 frames take no txn, and their ids are the entry's own). The
 * masterKeys and records are bytes, the ids and recovery ints (nothing here runs Python code, so the list stays
 * as it is between the two passes). */
static PyObject *add_requests(PyObject *args, int v3) {
    PyObject *adds;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &adds))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(adds), total = 0;
    AddFrame *f = PyMem_Malloc(sizeof(AddFrame) * (size_t)(n ? n : 1));
    if (f == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *add = PyList_GET_ITEM(adds, i);
        if (!PyTuple_Check(add) || PyTuple_GET_SIZE(add) != 6 || !PyLong_Check(PyTuple_GET_ITEM(add, 0)) ||
            !PyLong_Check(PyTuple_GET_ITEM(add, 1)) || !PyLong_Check(PyTuple_GET_ITEM(add, 2)) ||
            !PyBytes_Check(PyTuple_GET_ITEM(add, 3)) || !PyBytes_Check(PyTuple_GET_ITEM(add, 4)) ||
            !(PyBool_Check(PyTuple_GET_ITEM(add, 5)) || PyLong_CheckExact(PyTuple_GET_ITEM(add, 5)))) {
            PyErr_SetString(PyExc_TypeError, "each add is (txn, ledgerId, entryId, masterKey, record, recovery)");
            goto failed;
        }
        f[i].key_length = PyBytes_GET_SIZE(PyTuple_GET_ITEM(add, 3));
        f[i].length = PyBytes_GET_SIZE(PyTuple_GET_ITEM(add, 4)) - 4;
        f[i].recovery = PyObject_IsTrue(PyTuple_GET_ITEM(add, 5)); /* a bool or an int: no Python code */
        if (f[i].length < 0) {
            PyErr_SetString(PyExc_ValueError, "a record is at least its 4-byte size");
            goto failed;
        }
        if (as_u64(PyTuple_GET_ITEM(add, 0), &f[i].txn) < 0 || as_u64(PyTuple_GET_ITEM(add, 1), &f[i].ledger_id) < 0 ||
            as_u64(PyTuple_GET_ITEM(add, 2), &f[i].entry_id) < 0)
            goto failed;
        if (v3) {
            if (add_frame_sizes(&f[i]) < 0)
                goto failed;
        } else {
            if (f[i].key_length != MASTER_KEY_LENGTH) {
                PyErr_SetString(PyExc_ValueError, "a v2 masterKey is 20 bytes");
                goto failed;
            }
            if (f[i].length > INT32_MAX - 4 - MASTER_KEY_LENGTH) {
                PyErr_SetString(PyExc_ValueError, "entry too large");
                goto failed;
            }
            f[i].size = 4 + MASTER_KEY_LENGTH + f[i].length;
        }
        if (total > PY_SSIZE_T_MAX - 4 - f[i].size) {
            PyErr_SetString(PyExc_ValueError, "adds too large");
            goto failed;
        }
        total += 4 + f[i].size;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out != NULL) {
        unsigned char *q = (unsigned char *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *add = PyList_GET_ITEM(adds, i);
            const char *key = PyBytes_AS_STRING(PyTuple_GET_ITEM(add, 3));
            const char *entry = PyBytes_AS_STRING(PyTuple_GET_ITEM(add, 4)) + 4;
            q = v3 ? put_add_frame(q, &f[i], key, entry) : put_add_frame_v2(q, &f[i], key, entry);
        }
    }
    PyMem_Free(f);
    return out;
failed:
    PyMem_Free(f);
    return NULL;
}

static PyObject *add_requests_v3(PyObject *self, PyObject *args) { return add_requests(args, 1); }
static PyObject *add_requests_v2(PyObject *self, PyObject *args) { return add_requests(args, 0); }

/* The frame of a plain v3 READ_ENTRY request at q (NULL: only its size). */
static Py_ssize_t put_read_request(unsigned char *q, uint64_t txn, uint64_t ledger_id, uint64_t entry_id) {
    Py_ssize_t header_size = 5 + varint_size(txn);
    Py_ssize_t read_size = 2 + varint_size(ledger_id) + varint_size(entry_id);
    Py_ssize_t size = 2 + header_size + 2 + 1 + read_size;
    if (q == NULL)
        return 4 + size;
    q = put_be32(q, (int32_t)size);
    q = put_header(q, OP_READ_ENTRY, txn, header_size);
    *q++ = 0xa2; /* field 100, readRequest */
    *q++ = 0x06;
    *q++ = (unsigned char)read_size;
    *q++ = 0x08;
    q = put_varint(q, ledger_id);
    *q++ = 0x10;
    put_varint(q, entry_id);
    return 4 + size;
}

/* read_request_v3(txn, ledgerId, entryId) -> bytes (wire.read_request_v3) */
static PyObject *read_request_v3(PyObject *self, PyObject *args) {
    PyObject *txn_id, *ledger, *entry;
    if (!PyArg_ParseTuple(args, "OOO", &txn_id, &ledger, &entry))
        return NULL;
    uint64_t txn, ledger_id, entry_id;
    if (as_u64(txn_id, &txn) < 0 || as_u64(ledger, &ledger_id) < 0 || as_u64(entry, &entry_id) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, put_read_request(NULL, txn, ledger_id, entry_id));
    if (out != NULL)
        put_read_request((unsigned char *)PyBytes_AS_STRING(out), txn, ledger_id, entry_id);
    return out;
}

/* read_requests_v3(first txn, ledgerId, [entryId, ...]) -> bytes: the reads of the entries, txnIds counting up from
 * the first (a range read's requests of one burst) */
static PyObject *read_requests_v3(PyObject *self, PyObject *args) {
    PyObject *first, *ledger, *entries;
    if (!PyArg_ParseTuple(args, "OOO!", &first, &ledger, &PyList_Type, &entries))
        return NULL;
    uint64_t txn, ledger_id, entry_id;
    if (as_u64(first, &txn) < 0 || as_u64(ledger, &ledger_id) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(entries), size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (as_u64(PyList_GET_ITEM(entries, i), &entry_id) < 0)
            return NULL;
        size += put_read_request(NULL, txn + (uint64_t)i, ledger_id, entry_id);
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL)
        return NULL;
    unsigned char *q = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        as_u64(PyList_GET_ITEM(entries, i), &entry_id); /* checked above; the list cannot change meanwhile */
        q += put_read_request(q, txn + (uint64_t)i, ledger_id, entry_id);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"scan_requests_v3", scan_requests_v3, METH_VARARGS, "(buffer, offset, max frame size) -> (offset, items, stop)"},
    {"scan_requests_v2", scan_requests_v2, METH_VARARGS, "(buffer, offset, max frame size) -> (offset, items, stop)"},
    {"scan_responses_v3", scan_responses_v3, METH_VARARGS, "(buffer, offset, max frame size) -> (offset, items, stop)"},
    {"scan_responses_v2", scan_responses_v2, METH_VARARGS, "(buffer, offset, max frame size) -> (offset, items, stop)"},
    {"add_responses", add_responses, METH_VARARGS, "(answers, statuses) -> bytes"},
    {"read_response_v3", read_response_v3, METH_VARARGS, "(txn, status, ledgerId, entryId, body, maxLAC) -> bytes"},
    {"add_requests_v3", add_requests_v3, METH_VARARGS,
     "([(txn, ledgerId, entryId, masterKey, record, recovery), ...]) -> bytes"},
    {"add_requests_v2", add_requests_v2, METH_VARARGS,
     "([(txn, ledgerId, entryId, masterKey, record, recovery), ...]) -> bytes (txn and ids unused)"},
    {"read_request_v3", read_request_v3, METH_VARARGS, "(txn, ledgerId, entryId) -> bytes"},
    {"read_requests_v3", read_requests_v3, METH_VARARGS, "(first txn, ledgerId, [entryId, ...]) -> bytes"},
    {"set_response_item", set_response_item, METH_O, "(the type of response items: a tuple subclass, or None)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_frames", "BookKeeper's common frames, in C", -1,
                                    methods};

PyMODINIT_FUNC PyInit__frames(void) { return PyModule_Create(&module); }
