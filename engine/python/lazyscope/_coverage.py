"""Which PyTorch names LazyScope answers, and how: the source of
docs/pytorch_coverage.md (docs/generate_pytorch_coverage.py writes it;
tests/python/test_coverage_table.py fails when a listed name disappears or the
checked-in table is stale).

Each section maps a PyTorch name to its status: supported (same behaviour),
differs (works, with the difference noted), or refused (raises
NotImplementedError naming the function and what to use instead; the
refusals are installed from this table by ``install_refusals``).
"""

SUPPORTED, DIFFERS, REFUSED = "supported", "differs", "refused"


def _supported(names):
    return {name: (SUPPORTED, "") for name in names.split()}


# torch.X -> lazyscope.X
TORCH = _supported("""
    abs add addmm all allclose amax amin any arange argmax argmin argsort as_tensor baddbmm bincount bmm cat ceil
    chunk clamp clip clone concat cos cumprod cumsum diag diagonal diff div divide dot dropout einsum enable_grad
    empty_like eq equal erf exp eye flatten flip floor floor_divide fmod from_numpy full full_like gather ge
    get_default_dtype Generator gt hstack index_select is_floating_point is_grad_enabled is_tensor isclose isfinite
    isinf isnan le lerp linspace load log log1p log_softmax logical_and logical_not logical_or logsumexp lt
    manual_seed masked_fill masked_select matmul max maximum mean meshgrid min minimum mm mul multinomial narrow ne
    neg negative no_grad nonzero norm numel ones ones_like outer permute pow prod rand rand_like randint randn
    randn_like randperm reciprocal remainder repeat_interleave reshape roll round rsqrt save scatter scatter_add
    set_default_dtype set_grad_enabled set_printoptions sigmoid sign sin Size softmax sort split sqrt square squeeze
    stack std sub sum t tanh tensor tensordot topk trace transpose tril triu true_divide trunc unbind unique
    unsqueeze var var_mean vstack where zeros zeros_like
    float32 float float64 double float16 half bfloat16 int64 long int32 int uint8 bool
""")
TORCH.update({
    "empty": (DIFFERS, "zero-filled (PyTorch leaves memory uninitialized)"),
    "inference_mode": (DIFFERS, "the same as no_grad (tensors made inside are ordinary tensors)"),
    "fix": (SUPPORTED, ""),
    "bincount": (DIFFERS, "reads the data (a sync on a lazy device): its length depends on the values"),
    "multinomial": (DIFFERS, "samples on the host from the weights it reads (a sync on a lazy device)"),
    "repeat_interleave": (DIFFERS, "tensor repeats are read on the host (a sync on a lazy device); int repeats "
                                   "are not"),
    "nonzero": (DIFFERS, "reads the data (a counted fallback on a lazy device)"),
    "unique": (DIFFERS, "reads the data (a counted fallback on a lazy device)"),
    "masked_select": (DIFFERS, "reads the mask (a counted fallback on a lazy device)"),
    "einsum": (DIFFERS, "explicit subscripts only: '...' and subscripts repeated within one operand are refused"),
    "device": (DIFFERS, "'cpu' and 'lazy:N' devices; 'cuda' is refused"),
    "dtype": (DIFFERS, "no int16, int8, complex or float8 dtypes"),
})
TORCH.update({name: (REFUSED, instead) for name, instead in {
    "fft": "numpy.fft on the host (LazyScope has no FFT)",
    "jit": "plain eager code on a lazy device: LazyScope traces and caches graphs itself",
}.items()})
TORCH["cuda.is_available"] = (DIFFERS, "always False: LazyScope has no CUDA backend")
TORCH["cuda.device_count"] = (DIFFERS, "always 0")
TORCH["cuda.manual_seed"] = (DIFFERS, "seeds lazyscope's generator (as manual_seed)")
TORCH["cuda.manual_seed_all"] = (DIFFERS, "seeds lazyscope's generator (as manual_seed)")
TORCH.update(_supported("""
    amp.GradScaler cuda.amp.GradScaler get_float32_matmul_precision backends.cudnn.is_available
    backends.mps.is_available backends.mkldnn.is_available
"""))
for _name in ("autocast", "amp.autocast", "cuda.amp.autocast"):
    TORCH[_name] = (DIFFERS, "accepted and checked; ops run in their tensors' own dtypes (no mixed precision)")
TORCH["scatter_reduce"] = (DIFFERS, "reads the index's range (a sync on a lazy device) to refuse one out of range; "
                                    "memory slots x sources along dim")
TENSOR_SCATTER_REDUCE = TORCH["scatter_reduce"]
TORCH.update(_supported("""
    autograd.Function autograd.backward autograd.no_grad autograd.enable_grad autograd.set_grad_enabled
"""))
TORCH["autograd.grad"] = (DIFFERS, "is_grads_batched is refused; create_graph=True has no second derivative "
                                   "through overlapping max pooling and fused attention (a clear error)")
TORCH["special.ndtri"] = (DIFFERS, "sqrt(2) erfinv(2p - 1): ~1e-11 relative below p ~ 1e-4 in float64 (PyTorch's "
                                   "Cephes ndtri is exact there)")
TORCH["imag"] = (DIFFERS, "raises: LazyScope has no complex dtypes")
TORCH["set_float32_matmul_precision"] = (DIFFERS, "kept; products are float32 whatever it says")
TORCH.update(_supported("""
    expm1 exp2 log2 log10 sinh cosh frac logit clamp_min clamp_max nan_to_num count_nonzero broadcast_to
    broadcast_tensors addcmul addcdiv cdist searchsorted bucketize conv_transpose2d
    movedim moveaxis swapaxes swapdims tile ravel take_along_dim nansum nanmean logaddexp logaddexp2 hypot sgn
    deg2rad rad2deg fmax fmin heaviside sinc erfc dist cross std_mean aminmax cov corrcoef kthvalue logspace
    tril_indices triu_indices block_diag broadcast_shapes cartesian_prod bernoulli normal index_copy index_fill
    select take tensor_split hsplit vsplit mv addmv addr inner vdot kron diag_embed diagflat fliplr flipud rot90
    dstack column_stack row_stack msort logical_xor signbit isposinf isneginf isreal is_nonzero finfo iinfo
    result_type promote_types can_cast randint_like
"""))
TORCH["argwhere"] = (DIFFERS, "reads the data (a counted fallback on a lazy device), as nonzero")
TORCH["bernoulli"] = (DIFFERS, "draws from lazyscope's generator (the generator= argument is ignored)")
TORCH["normal"] = (DIFFERS, "draws from lazyscope's generator (the generator= argument is ignored)")
TORCH["median"] = (DIFFERS, "over a dim, the index is the element's in a stable sort (PyTorch leaves ties' "
                            "index unspecified)")
TORCH.update(_supported("""
    tan asinh acosh atanh arcsinh arccosh arctanh positive absolute multiply subtract ldexp var_mean renorm
    mvlgamma conj conj_physical resolve_conj resolve_neg real lgamma digamma erfinv special.gammaln
    special.digamma special.psi special.erfinv special.expit special.logit special.ndtr special.log_ndtr
    special.entr special.xlog1py special.erf special.erfc special.exp2 special.expm1 special.log1p
    special.sinc special.round special.xlogy special.logsumexp special.softmax special.log_softmax
    atleast_1d atleast_2d atleast_3d isin xlogy copysign float_power trapezoid trapz cumulative_trapezoid quantile
    nanquantile histc cummax cummin logcumsumexp get_rng_state set_rng_state initial_seed seed random.get_rng_state
    random.set_rng_state random.manual_seed random.seed random.initial_seed random.fork_rng
"""))
# torch.linalg and its top-level names (LAPACK kernels, gradients by the textbook adjoints).
TORCH.update(_supported("""
    det slogdet logdet inverse cholesky cholesky_solve cholesky_inverse pinverse matrix_power qr svd
    linalg.solve linalg.inv linalg.det linalg.slogdet linalg.cholesky linalg.solve_triangular linalg.eigh
    linalg.eigvalsh linalg.qr linalg.svd linalg.svdvals linalg.pinv linalg.matrix_rank linalg.matrix_norm
    linalg.norm linalg.vector_norm linalg.matrix_power linalg.multi_dot linalg.vecdot linalg.cross
"""))
TORCH["__version__"] = (DIFFERS, "LazyScope's own version (CMakeLists.txt's project version), not PyTorch's")
TORCH["where"] = (DIFFERS, "where(condition) alone reads the data (nonzero's counted fallback on a lazy device)")
TORCH["compile"] = (DIFFERS, "returns the module or function itself: a lazy device already traces each step "
                             "into a graph compiled once and cached; arguments are checked and change nothing")
TORCH.update(_supported("compiler.disable compiler.is_compiling compiler.reset"))
TORCH.update(_supported("""
    asarray addbmm chain_matmul combinations dsplit unflatten vander select_scatter slice_scatter masked_scatter
    index_add narrow_copy range greater greater_equal less less_equal not_equal
"""))
for _name in ("matrix_exp", "linalg.matrix_exp"):
    TORCH[_name] = (DIFFERS, "Pade 13 with scaling and squaring; the squarings come from the 1-norm, read on the "
                             "host (a sync on a lazy device)")
TORCH["unravel_index"] = (DIFFERS, "reads the indices on the host to refuse one out of bounds")
TORCH["gradient"] = (DIFFERS, "uniform spacing (a number or one per dim); coordinate tensors are refused")
for _name in ("unique_consecutive", "histogram", "poisson"):
    TORCH[_name] = (DIFFERS, "reads the values on the host (a sync on a lazy device)")
TORCH.update(_supported("""
    func.grad func.grad_and_value func.vjp func.jacrev func.hessian autograd.functional.jacobian
    autograd.functional.hessian autograd.functional.vjp autograd.functional.jvp autograd.functional.hvp
    autograd.functional.vhp
"""))
for _name in ("vmap", "func.vmap"):
    TORCH[_name] = (DIFFERS, "calls the function once per slice and stacks the results (the same values; on a lazy "
                             "device one graph for the batch)")
TORCH["func.jacfwd"] = (DIFFERS, "the same Jacobian, built by reverse passes")
TORCH["triangular_solve"] = (SUPPORTED, "")
TORCH["linalg.lstsq"] = (DIFFERS, "through the pseudo-inverse (gelsd's answer, rank-deficient A included); "
                                  "residuals and rank are empty tensors")
TORCH["linalg.qr"] = (DIFFERS, "the gradient needs mode='reduced' and at least as many rows as columns")
TORCH["linalg.det"] = (DIFFERS, "the gradient of a singular matrix's determinant is an error (PyTorch's "
                                "SVD-based rule gives the adjugate)")
TORCH["det"] = TORCH["linalg.det"]
TORCH.update({name: (REFUSED, instead) for name, instead in {
    "linalg.eig": "linalg.eigh for symmetric matrices (LazyScope has no complex dtypes for a general eig)",
    "linalg.eigvals": "linalg.eigvalsh for symmetric matrices (no complex dtypes)",
    "linalg.lu_factor": "linalg.solve, which factors and solves in one op",
}.items()})
TORCH.update(_supported("""
    gcd lcm nextafter frexp polygamma i0 special.i0 special.i0e special.i1 special.i1e
    special.polygamma special.multigammaln
"""))
TORCH["nanmedian"] = (DIFFERS, "over a dim, the index is the element's in a stable sort, an all-NaN line's its "
                               "first element's (PyTorch leaves ties' index unspecified)")
TORCH["mode"] = (DIFFERS, "the index is the mode's last occurrence along dim (PyTorch's CPU kernel takes the last "
                          "of the mode's run after an unstable sort by value: the same wherever that sort keeps "
                          "equal values in order; otherwise PyTorch's is unspecified)")
TORCH["special.zeta"] = (DIFFERS, "other < 0 (not an integer) gives NaN, where PyTorch (Cephes) sums the series for "
                                  "an integer input; a gradient for both operands (PyTorch's has none for input)")
TORCH.update(_supported("""
    bitwise_and bitwise_or bitwise_xor bitwise_not bitwise_left_shift bitwise_right_shift atan asin acos atan2
    arctan arcsin arccos arctan2
"""))

# torch.Tensor.X
TENSOR = _supported("""
    abs add add_ addmm all allclose amax amin any argmax argmin argsort backward bfloat16 bool byte ceil chunk clamp
    clamp_ clip clone contiguous copy_ cos cpu cumprod cumsum data detach diag diagonal diff dim div div_ divide
    double eq equal exp expand expand_as fill_ flatten flip float floor floor_divide fmod gather ge grad grad_fn gt
    half index_add index_add_ index_select int is_contiguous is_floating_point is_leaf isclose isfinite isinf isnan
    item le lerp log log1p log_softmax logical_and logical_not logical_or logsumexp long lt masked_fill masked_fill_
    matmul max maximum mean min minimum mm mul mul_ multinomial narrow ndim ne neg new_full new_ones new_tensor
    new_zeros norm normal_ numel numpy outer permute pow prod reciprocal relu remainder repeat repeat_interleave
    requires_grad requires_grad_ reshape reshape_as roll round rsqrt scatter scatter_add shape sigmoid sign sin size
    softmax sort split sqrt square squeeze std sub sub_ sum t tanh to tolist topk trace transpose tril triu trunc
    type type_as unbind uniform_ unsqueeze var view view_as where zero_ T mT __floordiv__ __mod__ __invert__
    __float__ __int__ __format__ __len__ __getitem__ __setitem__ __matmul__
""")
TENSOR.update({
    **_supported("""__and__ __or__ __xor__ __rand__ __ror__ __rxor__ __iand__ __ior__ __ixor__ bitwise_and
                    bitwise_or bitwise_xor bitwise_not __lshift__ __rshift__ __ilshift__ __irshift__
                    bitwise_left_shift bitwise_right_shift atan asin acos atan2 arctan arcsin arccos arctan2"""),
    **_supported("""expm1 exp2 log2 log10 sinh cosh frac logit clamp_min clamp_max nan_to_num count_nonzero
                    broadcast_to addcmul addcdiv addcmul_ addcdiv_ unflatten bmm movedim moveaxis swapaxes swapdims
                    tile ravel take_along_dim nansum nanmean logaddexp logaddexp2 hypot sgn deg2rad rad2deg fmax fmin
                    heaviside sinc erfc dist cross aminmax cov corrcoef kthvalue index_copy index_fill select
                    take tensor_split hsplit vsplit mv addmv addr inner kron diag_embed fliplr flipud rot90 msort
                    logical_xor signbit isposinf isneginf isreal is_nonzero unfold nbytes itemsize element_size
                    get_device ndimension nelement is_complex sign_ floor_ ceil_ round_ trunc_ frac_ reciprocal_
                    square_ atan_ asin_ acos_ expm1_ lerp_ clamp_min_ clamp_max_ nan_to_num_ index_fill_
                    index_copy_ addmm_ addmv_ addr_ baddbmm_ logical_xor_ hypot_ logaddexp_ fmod_ remainder_
                    floor_divide_ atan2_ sinh_ cosh_ log2_ log10_ exp2_ logit_ heaviside_ deg2rad_ rad2deg_
                    sgn_ register_hook retain_grad retains_grad tan asinh acosh atanh arcsinh arccosh arctanh positive absolute multiply subtract ldexp var_mean
                    std_mean renorm mvlgamma conj conj_physical resolve_conj resolve_neg real lgamma digamma erfinv
                    tan_ asinh_ acosh_ atanh_ ldexp_ renorm_ xlogy copysign float_power quantile nanquantile histc cummax cummin logcumsumexp squeeze_ unsqueeze_ t_
                    transpose_ swapaxes_ swapdims_"""),
    **_supported("""gcd lcm nextafter frexp polygamma i0 gcd_ lcm_ nextafter_ i0_ polygamma_"""),
    "mode": TORCH["mode"],
    "nanmedian": TORCH["nanmedian"],
    **_supported("""det slogdet logdet inverse cholesky cholesky_solve cholesky_inverse pinverse matrix_power qr
                    svd"""),
    **_supported("""fill_diagonal_ stride sum_to_size put_ triangular_solve ger dsplit hardshrink addbmm
                    masked_scatter narrow_copy matrix_exp select_scatter slice_scatter greater greater_equal less
                    less_equal not_equal"""),
    **{name: (DIFFERS, "drawn on the host from lazyscope's generator and uploaded (no sync)") for name in (
        "bernoulli_", "exponential_", "geometric_", "log_normal_", "cauchy_", "random_")},
    **{name: (DIFFERS, "the tensor itself: host memory is the device's here, nothing to pin or share") for name in (
        "pin_memory", "share_memory_", "is_pinned", "is_shared")},
    **{name: (DIFFERS, "reads the values on the host (a sync on a lazy device)") for name in (
        "unique_consecutive", "histogram")},
    "short": (REFUSED, "int32 (t.int()): LazyScope has no int16 dtype"),
    "char": (REFUSED, "int32 (t.int()) or uint8 (t.byte()): LazyScope has no int8 dtype"),
    "argwhere": (DIFFERS, "reads the data (a counted fallback on a lazy device), as nonzero"),
    "scatter_reduce": TENSOR_SCATTER_REDUCE,
    "bernoulli": (DIFFERS, "draws from lazyscope's generator (the generator= argument is ignored)"),
    "median": (DIFFERS, "over a dim, the index is the element's in a stable sort (PyTorch leaves ties' index "
                        "unspecified)"),
    "is_cuda": (DIFFERS, "always False (no CUDA backend)"),
    "bincount": (DIFFERS, "reads the data (a sync on a lazy device): its length depends on the values, as in "
                          "PyTorch/XLA"),
    "nonzero": (DIFFERS, "reads the data (a counted fallback on a lazy device)"),
    "unique": (DIFFERS, "reads the data (a counted fallback on a lazy device)"),
    "cuda": (REFUSED, "t.to(xm.xla_device()) or t.to('lazy:0'); LazyScope has no CUDA backend"),
    "multinomial": (DIFFERS, "samples on the host from the weights it reads (a sync on a lazy device)"),
    "repeat_interleave": (DIFFERS, "tensor repeats are read on the host (a sync on a lazy device)"),
    "item": (DIFFERS, "a sync on a lazy device (counted, with the line), as PyTorch/XLA"),
})

# torch.nn.X
NN = _supported("""
    Module Sequential ModuleList ModuleDict Parameter Identity Linear Conv1d Conv2d MaxPool2d AvgPool2d
    AdaptiveAvgPool2d BatchNorm1d BatchNorm2d LayerNorm GroupNorm Embedding Dropout Dropout2d ReLU GELU SiLU Tanh
    Sigmoid Softplus LeakyReLU Softmax LogSoftmax Flatten MultiheadAttention LSTM GRU TransformerEncoderLayer
    TransformerEncoder CrossEntropyLoss NLLLoss MSELoss L1Loss BCELoss BCEWithLogitsLoss SmoothL1Loss HuberLoss
    KLDivLoss ELU Hardtanh ReLU6 LogSigmoid Mish GLU CosineSimilarity ConvTranspose1d ConvTranspose2d
    Hardswish Hardsigmoid SELU CELU Softsign Tanhshrink PReLU Softmin Threshold Softshrink Hardshrink
    ZeroPad1d ZeroPad2d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d ReflectionPad2d ReplicationPad1d
    ReplicationPad2d ReplicationPad3d Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle
    MaxPool1d AvgPool1d AdaptiveAvgPool1d AdaptiveMaxPool1d AdaptiveMaxPool2d Dropout1d Unflatten InstanceNorm1d
    InstanceNorm2d ParameterList ParameterDict RNN RNNCell LSTMCell GRUCell TransformerDecoderLayer
    TransformerDecoder Transformer MarginRankingLoss HingeEmbeddingLoss SoftMarginLoss CosineEmbeddingLoss
    TripletMarginLoss PoissonNLLLoss GaussianNLLLoss MultiLabelSoftMarginLoss MultiMarginLoss PairwiseDistance
    Bilinear Fold Unfold AvgPool3d AdaptiveAvgPool3d ConvTranspose3d
    init.uniform_ init.normal_ init.constant_ init.zeros_ init.ones_ init.xavier_uniform_ init.xavier_normal_
    init.kaiming_uniform_ init.kaiming_normal_ init.trunc_normal_ init.calculate_gain init.eye_ init.dirac_
    init.sparse_
    utils.clip_grad_norm_ utils.clip_grad_value_ utils.parameters_to_vector utils.vector_to_parameters
    utils.rnn.pad_sequence utils.rnn.unpad_sequence
""")
NN.update({
    "CTCLoss": (DIFFERS, "the lengths and targets are read on the host (a sync for lazy tensors)"),
    "EmbeddingBag": (DIFFERS, "modes sum, mean, max; max_norm and scale_grad_by_freq are refused"),
    "LSTM": (DIFFERS, "proj_size is refused; otherwise PyTorch's parameters, gates and results"),
    "Conv2d": (SUPPORTED, ""),
    "Conv1d": (SUPPORTED, ""),
    "Conv3d": (SUPPORTED, ""),
    "MaxPool3d": (DIFFERS, "return_indices=True is refused"),
    "AdaptiveMaxPool2d": (DIFFERS, "return_indices=True is refused; tied maxima share the gradient (as amax)"),
    "AdaptiveMaxPool1d": (DIFFERS, "return_indices=True is refused; tied maxima share the gradient (as amax)"),
    "MaxPool1d": (DIFFERS, "return_indices=True is refused"),
    "ParameterList": (DIFFERS, "holds tensors (made parameters) and None only, not other objects"),
    "ParameterDict": (DIFFERS, "holds tensors (made parameters) and None only, not other objects"),
})
NN.update({name: (DIFFERS, "the lengths are read on the host (PyTorch too wants them on the CPU); RNN, LSTM and "
                          "GRU run the padded batch with each state held past its length") for name in (
    "utils.rnn.pack_padded_sequence", "utils.rnn.pad_packed_sequence", "utils.rnn.pack_sequence",
    "utils.rnn.unpack_sequence", "utils.rnn.PackedSequence")})
NN.update(_supported("""
    utils.weight_norm utils.remove_weight_norm utils.spectral_norm utils.remove_spectral_norm
    utils.parametrize.register_parametrization utils.parametrize.remove_parametrizations
    utils.parametrize.is_parametrized utils.parametrize.cached utils.parametrizations.weight_norm
    utils.parametrizations.spectral_norm
"""))
NN.update(_supported("""
    RMSNorm AlphaDropout Dropout3d Softmax2d RReLU LocalResponseNorm LPPool1d LPPool2d ChannelShuffle
    CircularPad1d CircularPad2d
"""))
NN["LazyLinear"] = (DIFFERS, "its parameters exist after the first forward (no UninitializedParameter): build the "
                             "optimizer after a dry run")
NN["utils.parametrizations.orthogonal"] = (REFUSED, "parametrize.register_parametrization with a module of your "
                                                    "own (Q of linalg.qr, say)")

# torch.nn.functional.X
FUNCTIONAL = _supported("""
    relu gelu silu tanh sigmoid softplus leaky_relu softmax log_softmax linear embedding conv1d conv2d max_pool2d
    avg_pool2d adaptive_avg_pool2d layer_norm batch_norm group_norm dropout dropout2d pad normalize l1_loss mse_loss
    cross_entropy nll_loss binary_cross_entropy binary_cross_entropy_with_logits one_hot
    scaled_dot_product_attention elu hardtanh relu6 logsigmoid mish glu smooth_l1_loss huber_loss kl_div
    cosine_similarity conv_transpose1d conv_transpose2d hardswish hardsigmoid prelu selu celu softsign softmin
    threshold tanhshrink softshrink hardshrink pixel_shuffle pixel_unshuffle upsample upsample_nearest
    upsample_bilinear max_pool1d avg_pool1d adaptive_avg_pool1d adaptive_max_pool1d adaptive_max_pool2d dropout1d
    instance_norm pairwise_distance margin_ranking_loss hinge_embedding_loss soft_margin_loss cosine_embedding_loss
    triplet_margin_loss poisson_nll_loss gaussian_nll_loss multilabel_soft_margin_loss multi_margin_loss
    bilinear unfold fold affine_grid conv3d conv_transpose3d avg_pool3d adaptive_avg_pool3d
""")
FUNCTIONAL.update(_supported("""
    rms_norm gumbel_softmax alpha_dropout dropout3d rrelu local_response_norm lp_pool1d lp_pool2d pdist
    channel_shuffle
"""))
FUNCTIONAL["ctc_loss"] = (DIFFERS, "the lengths and targets are read on the host (a sync for lazy tensors); the "
                                   "forward variables are a scan over T traced op by op")
FUNCTIONAL["grid_sample"] = (DIFFERS, "2-D inputs, modes bilinear and nearest (no bicubic)")
FUNCTIONAL["embedding_bag"] = (DIFFERS, "modes sum, mean, max; max_norm and scale_grad_by_freq are refused")
FUNCTIONAL.update({
    "interpolate": (DIFFERS, "modes nearest, linear, bilinear, trilinear (no bicubic/area, no antialias)"),
    "max_pool2d": (DIFFERS, "return_indices=True is refused"),
    "max_pool1d": (DIFFERS, "return_indices=True is refused"),
    "max_pool3d": (DIFFERS, "return_indices=True is refused"),
    "adaptive_max_pool2d": (DIFFERS, "return_indices=True is refused; tied maxima share the gradient (as amax)"),
    "adaptive_max_pool1d": (DIFFERS, "return_indices=True is refused; tied maxima share the gradient (as amax)"),
})

NN["init.orthogonal_"] = (DIFFERS, "the QR runs on the host in float64 with NumPy (the same distribution; other "
                                   "draws than PyTorch's for a seed)")

# torch.distributions.X
_HOST_DRAW = "sampled on the host with NumPy from the parameters' values (a sync on a lazy device)"
DISTRIBUTIONS = _supported("""
    Normal Uniform Bernoulli OneHotCategorical MultivariateNormal Exponential Laplace LogNormal Independent
    TransformedDistribution
    kl_divergence register_kl kl.kl_divergence kl.register_kl
    transforms.Transform transforms.ExpTransform transforms.AffineTransform transforms.SigmoidTransform
    transforms.TanhTransform transforms.ComposeTransform
    constraints.Constraint constraints.real constraints.real_vector constraints.positive constraints.nonnegative
    constraints.unit_interval constraints.interval constraints.half_open_interval constraints.greater_than
    constraints.greater_than_eq constraints.less_than constraints.boolean constraints.integer_interval
    constraints.nonnegative_integer constraints.positive_integer constraints.simplex constraints.one_hot
    constraints.lower_triangular constraints.lower_cholesky constraints.independent constraints.dependent
    constraints.dependent_property constraints.is_dependent
""")
DISTRIBUTIONS.update({
    "Distribution": (DIFFERS, "validation on a lazy device is read after the next mark_step (the ValueError comes "
                              "from mark_step): reading it at the call would sync every step; draws come from "
                              "lazyscope's generator (other values than PyTorch's for a seed)"),
    "Categorical": (DIFFERS, "samples by Gumbel-max on the parameters' device (the same distribution as PyTorch's "
                             "multinomial, other draws; no sync)"),
    "Gamma": (DIFFERS, _HOST_DRAW + " by Marsaglia-Tsang; rsample's gradient by implicit differentiation on the "
                       "host; cdf refused (no gammainc)"),
    "Beta": (DIFFERS, "normalized Gamma draws: " + _HOST_DRAW),
    "Dirichlet": (DIFFERS, "normalized Gamma draws: " + _HOST_DRAW),
    "Poisson": (DIFFERS, _HOST_DRAW),
    "Binomial": (DIFFERS, _HOST_DRAW + "; entropy and enumerate_support read total_count"),
    "constraints.positive_definite": (DIFFERS, "symmetric with positive eigvalsh (PyTorch: cholesky_ex's info)"),
})
DISTRIBUTIONS.update({name: (REFUSED, instead) for name, instead in {
    "Cauchy": "loc + scale * tan(pi * (lazyscope.rand(...) - 0.5)) for draws, or Normal/Laplace",
    "StudentT": "Normal, or a Normal whose precision is a Gamma draw (the scale mixture)",
    "HalfNormal": "Normal(0, scale) with .abs() of its draws and log_prob + log(2)",
    "Multinomial": "Categorical.sample((n,)) counted with nn.functional.one_hot(...).sum(0)",
    "MixtureSameFamily": "lazyscope.logsumexp of the components' log_prob plus the mixture's Categorical logits",
    "LowRankMultivariateNormal": "MultivariateNormal with scale_tril",
    "RelaxedOneHotCategorical": "softmax((logits + Gumbel noise) / temperature), the noise from lazyscope.rand",
    "RelaxedBernoulli": "sigmoid((logits + logistic noise) / temperature), the noise from lazyscope.rand",
}.items()})

# torch.optim.X
OPTIM = _supported("""
    Optimizer SGD Adam AdamW RMSprop Adagrad lr_scheduler.LRScheduler lr_scheduler.StepLR lr_scheduler.CosineAnnealingLR
    lr_scheduler.LambdaLR lr_scheduler.OneCycleLR lr_scheduler.ReduceLROnPlateau lr_scheduler.MultiStepLR
    lr_scheduler.ExponentialLR lr_scheduler.LinearLR Adamax Adadelta NAdam RAdam lr_scheduler.ConstantLR
    lr_scheduler.PolynomialLR lr_scheduler.MultiplicativeLR lr_scheduler.CosineAnnealingWarmRestarts
    lr_scheduler.SequentialLR lr_scheduler.CyclicLR
""")
OPTIM["LBFGS"] = (DIFFERS, "a lazy device reads values at each closure evaluation (the loss, max |g|, y.s, y.y) "
                           "and once per iteration (g.d, max |d|), as PyTorch/XLA; the history's growth traces one "
                           "graph per length up to history_size")

# torch.utils.X
UTILS = _supported("""
    data.Dataset data.TensorDataset data.Subset data.ConcatDataset data.random_split data.default_collate
""")
UTILS.update({
    "data.DataLoader": (DIFFERS, "num_workers > 0 uses worker threads, not processes (same batches as 0)"),
    "checkpoint.checkpoint": (DIFFERS, "runs the function: the same values and gradients, without recomputation"),
    "tensorboard.SummaryWriter": (DIFFERS, "writes into LazyScope's history, not TensorBoard files: scalars, "
                                           "scalars dicts, histograms (min/mean/max/std) and hparams; images, "
                                           "text, graphs... accepted, not recorded (a warning once)"),
})

# Section title, the module path under lazyscope that PyTorch's names map to, the table.
SECTIONS = [
    ("torch", "lazyscope", TORCH),
    ("torch.Tensor", "lazyscope.Tensor", TENSOR),
    ("torch.nn", "lazyscope.nn", NN),
    ("torch.nn.functional", "lazyscope.nn.functional", FUNCTIONAL),
    ("torch.distributions", "lazyscope.distributions", DISTRIBUTIONS),
    ("torch.optim", "lazyscope.optim", OPTIM),
    ("torch.utils", "lazyscope.utils", UTILS),
]

# PyTorch/XLA's modules: their STATUS tables live beside the code.
XLA_MODULES = [
    ("torch_xla.core.xla_model", "lazyscope.compat.torch_xla.core.xla_model"),
    ("torch_xla.distributed.parallel_loader", "lazyscope.compat.torch_xla.distributed.parallel_loader"),
    ("torch_xla.distributed.xla_multiprocessing", "lazyscope.compat.torch_xla.distributed.xla_multiprocessing"),
    ("torch_xla.utils.utils", "lazyscope.compat.torch_xla.utils.utils"),
    ("torch_xla.debug.metrics", "lazyscope.compat.torch_xla.debug.metrics"),
]


def resolve(root, dotted):
    """The object at ``dotted`` under ``root``, or None."""
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _refusal(pytorch_name, instead):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"{pytorch_name} is not supported by LazyScope; use {instead}")
    refuse.__name__ = pytorch_name.rsplit(".", 1)[-1]
    refuse.__doc__ = f"Refused: use {instead}."
    return refuse


def install_refusals():
    """Every refused name of the torch-side tables, where LazyScope has nothing of that name, raises
    NotImplementedError naming it and what to use instead."""
    import importlib
    for title, path, table in SECTIONS:
        root = importlib.import_module(path) if path != "lazyscope.Tensor" else importlib.import_module(
            "lazyscope").Tensor
        for name, (status, instead) in table.items():
            parent_name, _, leaf = name.rpartition(".")
            parent = resolve(root, parent_name) if parent_name else root
            if status == REFUSED and parent is not None and getattr(parent, leaf, None) is None:
                setattr(parent, leaf, _refusal(f"{title}.{name}", instead))


def markdown():
    """docs/pytorch_coverage.md's text."""
    import importlib
    lines = ["# PyTorch and PyTorch/XLA coverage", "",
             "Generated by `docs/generate_pytorch_coverage.py` from `engine/python/lazyscope/_coverage.py` and",
             "the `STATUS` tables of `lazyscope.compat.torch_xla`; do not edit by hand.",
             "`tests/python/test_coverage_table.py` fails when a listed name disappears or this file is stale.", "",
             "Status: **supported** (PyTorch's behaviour), **differs** (works; the difference is noted),",
             "**refused** (raises `NotImplementedError` naming the function and what to use instead).", ""]
    sections = [(title, path, table) for title, path, table in SECTIONS]
    sections += [(title, path, importlib.import_module(path).STATUS) for title, path in XLA_MODULES]
    for title, path, table in sections:
        counts = {s: sum(1 for v in table.values() if v[0] == s) for s in (SUPPORTED, DIFFERS, REFUSED)}
        lines += [f"## {title}", "",
                  f"Under `{path}`: {counts[SUPPORTED]} supported, {counts[DIFFERS]} differ, "
                  f"{counts[REFUSED]} refused.", "",
                  "| PyTorch name | status | notes |", "|---|---|---|"]
        for name in sorted(table, key=lambda n: (n.lower(), n)):
            status, note = table[name]
            lines.append(f"| `{title}.{name}` | {status} | {note.replace('|', '/')} |")
        lines.append("")
    return "\n".join(lines)
