"""torch.backends as training scripts set and probe it. The flags are kept
(a script reads back what it set) and change nothing here: LazyScope's CPU
backend has no cuDNN, MPS or TF32; its products are float32 always."""


class _Flags:
    def __init__(self, name, available, **flags):
        self._name, self._available = name, available
        self.__dict__.update(flags)

    def is_available(self):
        return self._available

    def __repr__(self):
        return f"<lazyscope.backends.{self._name}>"


cudnn = _Flags("cudnn", False, enabled=True, benchmark=False, deterministic=False, allow_tf32=True)
mps = _Flags("mps", False)
mkldnn = _Flags("mkldnn", True, enabled=True)  # oneDNN runs the convolutions
openmp = _Flags("openmp", True)


class _Matmul:
    allow_tf32 = False
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True


class _Cuda(_Flags):
    def __init__(self):
        super().__init__("cuda", False)
        self.matmul = _Matmul()

    def is_built(self):
        return False


cuda = _Cuda()
