cimport cython


@cython.final
cdef class TopicNames:
    cdef public object cap, forgotten
    cdef dict _in_cluster, _in_capture, _clusters
    cdef object _in_cluster_order, _in_capture_order, _clusters_order

    cpdef saw_cluster(self, conn_id, cluster_id)
    cpdef cluster(self, conn_id)
    cpdef learn(self, cluster_id, topic_id, name)
    cdef int _put(self, dict table, order, key, value) except -1
    @cython.locals(in_cluster=dict)
    cpdef name(self, cluster_id, topic_id)
    @cython.locals(names=list)
    cpdef text(self, refs, conn_id)
