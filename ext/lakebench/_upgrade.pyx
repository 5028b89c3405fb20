# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The upgrade of a store of an older format, run by a writable open in its
own write transaction (so a crash leaves the store as it was):

* format 1 to 3 -> 4: ``cs`` (graph -> subjects) is filled from the
  ``cspo`` index, which is then deleted (a graph is read from ``spoc``
  through ``cs``);
* format 1 or 2 -> 3 needs no rewrite: ``i2l`` is created empty, and the
  literals stored before stay in ``i2t`` under plain ids.
"""
from libc.stdint cimport uint8_t, uint32_t

from liblmdb cimport *
from lakebench._codec cimport E_CORRUPT, ID_SIZE, ENTRY_VALUE_SIZE, get_be32, pack_pair


cdef int graphs_from_cspo(MDB_txn* txn, MDB_dbi cs) noexcept nogil:
    """Fill ``cs`` with the (graph, subject) pairs of ``cspo``, then delete
    ``cspo``; 0 when done, MDB_NOTFOUND when there is no ``cspo``, else the
    error."""
    cdef MDB_dbi cspo
    cdef MDB_cursor* cur = NULL
    cdef MDB_cursor* out = NULL
    cdef MDB_val k, v, ok, ov
    cdef uint8_t kb[ID_SIZE]
    cdef uint8_t vb[ID_SIZE]
    cdef uint32_t g, s, last_g = 0, last_s = 0
    cdef int rc
    rc = mdb_dbi_open(txn, b"cspo", MDB_DUPSORT | MDB_DUPFIXED, &cspo)
    if rc:
        return rc
    rc = mdb_cursor_open(txn, cspo, &cur)
    if rc == 0:
        rc = mdb_cursor_open(txn, cs, &out)
    if rc == 0:
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        if k.mv_size != ID_SIZE or v.mv_size != ENTRY_VALUE_SIZE:
            rc = E_CORRUPT
            break
        # cspo is sorted by graph, then subject: the pairs come in cs's order
        g = get_be32(<uint8_t*>k.mv_data)
        s = get_be32(<uint8_t*>v.mv_data)
        if g == 0 or s == 0:   # no id is 0
            rc = E_CORRUPT
            break
        if g != last_g or s != last_s:
            pack_pair(g, s, kb, vb, &ok, &ov)
            rc = mdb_cursor_put(out, &ok, &ov, MDB_APPENDDUP if g == last_g else MDB_APPEND)
            if rc:
                break
            last_g = g
            last_s = s
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    if cur != NULL:
        mdb_cursor_close(cur)
    if out != NULL:
        mdb_cursor_close(out)
    if rc == MDB_NOTFOUND:
        rc = mdb_drop(txn, cspo, 1)
    return rc
