# C types for decoders/embedded.py when Cython compiles it (the .py is the only source).
cimport cython
from decoders.element_budget cimport ElementBudget

cdef dict _versions_cache

@cython.locals(version=cython.long, known=cython.long, layout=cython.long, end=Py_ssize_t, size=Py_ssize_t,
               entry=tuple, readers=dict, result=dict)
cpdef dict decode_versioned(str schema, bytes raw, ElementBudget budget)
@cython.locals(result=dict)
cpdef object decode_group_bytes(object protocol_type, str role, object raw, ElementBudget budget)
@cython.locals(seen=list, hit=tuple, left=Py_ssize_t, stops=Py_ssize_t, item=dict, result=object, first=dict)
cpdef _decode_each_metadata(object ptype, object items, ElementBudget budget)
@cython.locals(stops=Py_ssize_t)
cpdef object _noted(object msg, ElementBudget budget)
