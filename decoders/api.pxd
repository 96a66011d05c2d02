cpdef object _readers(object api_key, object version, str kind)
cpdef object _exact(tuple entry, bytes b)
cpdef object _response_exact(bytes b, object api_key, object api_version, object max_elements, object over_budget)
