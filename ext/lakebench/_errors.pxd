# The store's errors: raise_rc turns a return code of LMDB or of the core into one.
cdef int raise_rc(int rc, str what) except -1
