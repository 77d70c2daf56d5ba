"""Hardware access: NVML (nvml.py), the host's /proc and /sys (host.py), torch.cuda (torch_cuda.py).

Only these modules touch hardware; each imports its library lazily and turns a missing library,
device or field into data rather than an exception.
"""
