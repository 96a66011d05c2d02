cpdef object _exact(tuple fast, bytes b)
cpdef object _response_exact(bytes b, object api_key, object api_version, object max_elements, object over_budget)
