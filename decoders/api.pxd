cpdef object _exact(tuple fast, bytes b)
cpdef object _fast(dict table, object api_key, object version)
cpdef object _response_exact(bytes b, object api_key, object api_version, object max_elements, object over_budget)
