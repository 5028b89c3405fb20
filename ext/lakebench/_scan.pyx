# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The iterator over one scan of a transaction (``Txn.quads``,
``Txn.quad_ids``, ``Txn.serialize``): quads of encoded terms or of ids, in
batches, or N-Triples / Turtle chunks through ``_rdfwriter``.

A scan belongs to its transaction: it holds a reference to it (so the C
state it points into lives as long as the scan) and stops with an error once
that transaction has ended (its generation moved on).
"""
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memset
from cpython.bytes cimport PyBytes_FromStringAndSize

from liblmdb cimport *
from lakebench._codec cimport E_DANGLING, get_stored, read_term, TermBuf, termbuf_free
from lakebench._errors cimport raise_rc
from lakebench._rdfwriter cimport tw_init, tw_header, tw_triple, tw_finish, tw_free
from lakebench._txncore cimport scan_open, scan_close, scan_next

from lakebench._errors import StoreError


cdef Scan open_scan(object owner, TxnCore* core, const MDB_dbi* dbi, const uint64_t* generation, bint write,
                    const ScanState* planned, bint found, int mode, prefixes, Py_ssize_t chunk_size):
    """A scan of ``owner`` (a live transaction whose C state is ``core``) over
    the pattern ``planned`` (``found`` False: a bound term is unknown, so
    nothing matches).  ``mode``: 0 quads of encoded terms, 3 quads of ids,
    1 N-Triples, 2 Turtle (with ``prefixes``)."""
    cdef Scan it = Scan.__new__(Scan)
    cdef int rc
    it.owner = owner
    it.core = core
    it.dbi = dbi
    it.owner_generation = generation
    it.generation = generation[0]
    it.write = write
    it.mode = mode
    it.chunk_size = chunk_size if chunk_size > 0 else 1 << 16
    it.cache = {}
    it.done = False
    it.st = planned[0]
    it.empty = not found
    if not it.empty:
        rc = scan_open(core, &it.st)
        if rc:
            raise_rc(rc, "mdb_cursor_open")
    if mode == 1 or mode == 2:
        tw_init(&it.writer, mode == 2, prefixes, core.txn, dbi)
    return it


cdef class Scan:
    """Iterator over a pattern: quads of encoded terms (mode 0), id quads
    (mode 3), or N-Triples (1) / Turtle (2) chunks."""

    def __cinit__(self):
        memset(&self.st, 0, sizeof(ScanState))
        memset(&self.writer, 0, sizeof(TripleWriter))
        memset(&self.term, 0, sizeof(TermBuf))
        self.done = True   # until open_scan: a Scan() made from Python yields nothing

    def __dealloc__(self):
        self._close()
        tw_free(&self.writer)
        termbuf_free(&self.term)

    cdef void _close(self) noexcept:
        if self.st.cur != NULL:
            # a read cursor is ours to free; a write transaction frees its
            # cursors itself when it ends
            if self.owner is not None and (not self.write or
                                           (self.core.txn != NULL and self.generation == self.owner_generation[0])):
                scan_close(&self.st)
            self.st.cur = NULL
            self.st.subjects = NULL
        self.done = True

    def close(self):
        self._close()

    def __iter__(self):
        return self

    cdef int _check_live(self) except -1:
        if self.core == NULL or self.core.txn == NULL or self.generation != self.owner_generation[0]:
            self._close()
            raise StoreError("the transaction of this iterator is finished")
        return 0

    def __next__(self):
        if self.mode == 0 or self.mode == 3:
            raise TypeError("iterate quads through next_batch()")
        return self._next_text()

    cdef _next_text(self):
        """The next chunk of text: the scan's triples through the writer."""
        cdef int rc = 0
        cdef uint32_t q[4]
        cdef TripleWriter* w = &self.writer
        if self.done and w.out.n == 0 and self.header_done:
            raise StopIteration
        if not self.header_done:
            self.header_done = True
            if tw_header(w):
                raise MemoryError()
        if not self.done and not self.empty:
            self._check_live()
            with nogil:
                while w.out.n < <size_t>self.chunk_size:
                    rc = scan_next(&self.st, q)
                    if rc:
                        break
                    rc = tw_triple(w, q[0], q[1], q[2])
                    if rc:
                        break
            if rc == MDB_NOTFOUND:
                self._close()
                if tw_finish(w):
                    raise MemoryError()
            elif rc:
                self._close()
                raise_rc(rc, "serialize")
        elif not self.done:
            self._close()
        chunk = PyBytes_FromStringAndSize(w.out.p, w.out.n)
        w.out.n = 0
        if not chunk:
            raise StopIteration
        return chunk

    cdef _fill(self):
        """Up to BATCH matching quads in self.batch (terms resolved for mode 0)."""
        cdef int rc = 0, j
        cdef Py_ssize_t n = 0
        if self.done or self.empty:
            self._close()
            return 0
        self._check_live()
        with nogil:
            while n < BATCH:
                rc = scan_next(&self.st, self.batch[n])
                if rc:
                    break
                if self.mode == 0:
                    for j in range(4):
                        rc = get_stored(self.core.txn, self.dbi, self.batch[n][j], &self.terms[n][j])
                        if rc == MDB_NOTFOUND:
                            rc = E_DANGLING   # not the scan's end: a quad names no term
                        if rc:
                            break
                    if rc:
                        break
                n += 1
        if rc == MDB_NOTFOUND:
            self._close()
        elif rc:
            self._close()
            raise_rc(rc, "scan")
        return n

    def next_batch(self):
        """The next list of up to 256 results (empty at the end)."""
        cdef Py_ssize_t n, i
        cdef int j
        cdef list out = []
        cdef dict cache = self.cache
        cdef uint32_t tid
        cdef MDB_val v
        cdef int rc
        if self.mode == 1 or self.mode == 2:
            raise TypeError("a serializer yields chunks")
        n = self._fill()
        for i in range(n):
            if self.mode == 3:
                out.append((self.batch[i][0], self.batch[i][1], self.batch[i][2], self.batch[i][3]))
                continue
            row = []
            for j in range(4):
                tid = self.batch[i][j]
                term = cache.get(tid)
                if term is None:
                    rc = read_term(&self.terms[i][j], &self.term, &v)
                    if rc:
                        self._close()
                        raise_rc(rc, "scan")
                    term = PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size)
                    if len(cache) < 4096:
                        cache[tid] = term
                row.append(term)
            out.append(tuple(row))
        return out


def iter_batches(Scan it):
    """The quads of a scan (mode 0 or 3), one by one, batch by batch."""
    try:
        while True:
            batch = it.next_batch()
            if not batch:
                return
            yield from batch
    finally:
        it.close()


