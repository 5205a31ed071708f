"""One helper for the standalone CUDA test scripts (test_cuda_device.py, test_cuda_graph.py), which run without
pytest on the GPU machine: the message of the error a call must raise."""


def error_of(exc, fn, what):
    """str() of the exc that fn() raises; AssertionError(what) when it raises nothing (another type propagates)"""
    try:
        fn()
    except exc as e:
        return str(e)
    raise AssertionError(what)
