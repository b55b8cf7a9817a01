"""Every op of the engine's op table has an oracle test on both devices.

COVERAGE maps each op name (``_C._op_names()``, the op table in table order)
to the tests that check its values against NumPy (or another independent
oracle) and, where the op has a gradient, the tests that check the gradient
against float64 central finite differences. A new op without a row fails
here, so it cannot land untested; a row naming a test that does not exist,
or one that does not run on both "cpu" and "lazy:0", fails too.
"""
import importlib
import inspect

import pytest

from lazyscope import _C

# Tests that are the oracle for ops that are building blocks of every test.
ANY_VALUES = "test_tensor_ops::test_elementwise_with_broadcasting_matches_numpy"

# op -> (value tests, gradient tests). A gradient column of None: the op has
# no gradient (integer or boolean result, or a gradient op itself whose
# values are what the forward op's gradient test checks).
COVERAGE = {
    "device_data": ([ANY_VALUES], None),
    "cast": (["test_dtypes::test_to_dtype_matches_numpy_astype", "test_dtypes::test_lazy_promotion_equals_eager"],
             ["test_autograd::test_gradients_of_promoted_operands_come_back_in_their_dtype"]),
    **{op: (["test_elementwise_ops::test_binary_with_broadcasting_matches_numpy",
             "test_elementwise_ops::test_mixed_dtype_binary_ops",
             "test_op_coverage_gaps::test_binary_ops_on_16_bit_floats_match_numpy"],
            ["test_autograd::test_binary_gradients_sum_broadcast_dims"])
       for op in ("add", "sub", "mul", "div", "maximum", "minimum")},
    "pow": (["test_elementwise_ops::test_pow_tensor_and_scalar_exponents"],
            ["test_autograd::test_binary_gradients_sum_broadcast_dims",
             "test_autograd::test_unary_gradients_match_finite_differences"]),
    **{op: (["test_elementwise_ops::test_comparisons_give_bool_and_promote"], None)
       for op in ("eq", "ne", "lt", "le", "gt", "ge")},
    **{op: (["test_elementwise_ops::test_logical_ops_take_any_dtype"], None)
       for op in ("logical_and", "logical_or", "logical_not")},
    "where": (["test_elementwise_ops::test_where_broadcasts_and_promotes"],
              ["test_autograd::test_binary_gradients_sum_broadcast_dims"]),
    **{op: (["test_elementwise_ops::test_unary_matches_numpy",
             "test_elementwise_ops::test_floating_ops_compute_integers_in_float32",
             "test_op_coverage_gaps::test_unary_ops_on_16_bit_floats_match_numpy"],
            ["test_autograd::test_unary_gradients_match_finite_differences"])
       for op in ("exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid", "gelu", "silu",
                  "softplus")},
    **{op: (["test_elementwise_ops::test_unary_matches_numpy", "test_elementwise_ops::test_integer_unary_ops_stay_integer",
             "test_op_coverage_gaps::test_unary_ops_on_16_bit_floats_match_numpy"],
            ["test_autograd::test_unary_gradients_match_finite_differences"])
       for op in ("neg", "abs", "relu", "leaky_relu", "clamp")},
    "matmul": (["test_layout_and_matmul::test_matmul_batches_broadcasts_and_takes_vectors",
                "test_layout_and_matmul::test_matmul_promotes_and_checks_shapes",
                "test_op_coverage_gaps::test_matmul_on_16_bit_floats_matches_numpy"],
               ["test_autograd::test_matmul_gradients"]),
    "conv2d": (["test_conv_pool_norm::test_conv2d_matches_numpy",
                "test_op_coverage_gaps::test_conv_and_pools_on_16_bit_floats_match_numpy"],
               ["test_conv_pool_norm::test_conv2d_gradients_match_finite_differences"]),
    "conv2d_backward_input": (["test_conv_pool_norm::test_conv2d_gradients_match_finite_differences",
                               "test_conv_transpose::test_conv_transpose2d_matches_numpy"],
                              ["test_conv_transpose::test_conv_transpose2d_gradients_match_finite_differences"]),
    "conv2d_backward_weight": (["test_conv_pool_norm::test_conv2d_gradients_match_finite_differences"], None),
    "max_pool2d": (["test_conv_pool_norm::test_max_pool2d_matches_numpy",
                    "test_op_coverage_gaps::test_conv_and_pools_on_16_bit_floats_match_numpy"],
                   ["test_conv_pool_norm::test_max_pool2d_gradients_match_finite_differences"]),
    "max_pool2d_backward": (["test_conv_pool_norm::test_max_pool2d_gradients_match_finite_differences"], None),
    "avg_pool2d": (["test_conv_pool_norm::test_avg_pool2d_matches_numpy",
                    "test_op_coverage_gaps::test_conv_and_pools_on_16_bit_floats_match_numpy"],
                   ["test_conv_pool_norm::test_avg_pool2d_gradients_match_finite_differences"]),
    "avg_pool2d_backward": (["test_conv_pool_norm::test_avg_pool2d_gradients_match_finite_differences"], None),
    "adaptive_avg_pool2d": (["test_conv_pool_norm::test_adaptive_avg_pool2d_matches_numpy",
                             "test_op_coverage_gaps::test_conv_and_pools_on_16_bit_floats_match_numpy"],
                            ["test_conv_pool_norm::test_adaptive_avg_pool2d_gradients_match_finite_differences"]),
    "adaptive_avg_pool2d_backward": (
        ["test_conv_pool_norm::test_adaptive_avg_pool2d_gradients_match_finite_differences"], None),
    # Random: the oracle is the keep rate and the 1/(1-p) scale, not fixed values.
    "dropout_mask": (["test_dropout::test_dropout_keeps_about_1_minus_p_and_scales_the_rest",
                      "test_dropout::test_manual_seed_reproduces_masks_and_the_devices_agree"],
                     ["test_dropout::test_dropout_gradient_is_the_mask_times_the_scale"]),
    **{op: (["test_layout_and_matmul::test_layout_op_matches_numpy"], ["test_autograd::test_layout_gradients"])
       for op in ("reshape", "permute", "expand")},
    **{op: (["test_reductions::test_reduction_matches_numpy", "test_reductions::test_integer_reductions"],
            ["test_autograd::test_reduction_gradients"])
       for op in ("sum", "prod", "amax", "amin")},
    **{op: (["test_reductions::test_reduction_matches_numpy"], ["test_autograd::test_reduction_gradients"])
       for op in ("mean", "var", "logsumexp")},
    **{op: (["test_reductions::test_argmax_argmin_and_max_min_with_dim",
             "test_reductions::test_nan_propagates_through_max_and_argmax"], None)
       for op in ("argmax", "argmin")},
    **{op: (["test_reductions::test_any_all_over_any_dims"], None) for op in ("any", "all")},
    **{op: (["test_nn_ops::test_softmax_and_log_softmax_match_numpy",
             "test_nn_ops::test_softmax_of_integers_is_float32_and_dtype_argument_casts"],
            ["test_nn_ops::test_softmax_gradients_match_finite_differences"])
       for op in ("softmax", "log_softmax")},
    "one_hot": (["test_nn_ops::test_one_hot"], None),
    "nll_loss": (["test_nn_ops::test_nll_and_cross_entropy_match_numpy_and_finite_differences",
                  "test_losses_weighted::test_weighted_nll_loss_and_probability_targets"],
                 ["test_nn_ops::test_nll_and_cross_entropy_match_numpy_and_finite_differences"]),
    "nll_loss_backward": (["test_nll_loss_backward::test_nll_loss_gradient_matches_numpy_bit_for_bit",
                           "test_nll_loss_backward::test_weighted_smoothed_cross_entropy_gradient_matches_numpy"],
                          None),
    "layer_norm": (["test_conv_pool_norm::test_layer_norm_matches_numpy"],
                   ["test_conv_pool_norm::test_layer_norm_gradients_match_finite_differences",
                    "test_conv_pool_norm::test_layer_norm_op_gradients_with_and_without_weight_and_bias"]),
    "layer_norm_backward": (["test_conv_pool_norm::test_layer_norm_op_gradients_with_and_without_weight_and_bias"],
                            None),
    "layer_norm_param_grads": (["test_conv_pool_norm::test_layer_norm_op_gradients_with_and_without_weight_and_bias",
                                "test_conv_pool_norm::test_layer_norm_gradients_match_finite_differences"], None),
    "attention": (["test_attention_op::test_attention_and_its_gradients_match_numpy",
                   "test_attention_op::test_float64_attention_matches_numpy_closely"],
                  ["test_attention_op::test_gradients_match_finite_differences"]),
    "attention_backward": (["test_attention_op::test_attention_and_its_gradients_match_numpy"], None),
    "linalg.solve": (["test_linalg::test_solve_inv_det_match_numpy_on_batches",
                      "test_linalg::test_solve_broadcasts_batches_takes_vectors_and_left_false"],
                     ["test_linalg::test_gradients_of_solve_inv_det"]),
    "linalg.inv": (["test_linalg::test_solve_inv_det_match_numpy_on_batches"],
                   ["test_linalg::test_gradients_of_solve_inv_det"]),
    "linalg.slogdet": (["test_linalg::test_determinant_signs_and_singular_matrices"],
                       ["test_linalg::test_gradients_of_solve_inv_det"]),
    "linalg.cholesky": (["test_linalg::test_cholesky_and_triangular_solves"],
                        ["test_linalg::test_gradients_of_cholesky_and_triangular_solve"]),
    "linalg.solve_triangular": (["test_linalg::test_cholesky_and_triangular_solves"],
                                ["test_linalg::test_gradients_of_cholesky_and_triangular_solve"]),
    "linalg.eigh": (["test_linalg::test_eigh_reconstructs_and_matches_numpy_eigenvalues"],
                    ["test_linalg::test_gradient_of_eigh_through_a_sign_invariant_loss"]),
    "linalg.qr": (["test_linalg::test_qr_and_svd_match_numpy"], ["test_linalg::test_gradient_of_qr"]),
    "linalg.svd": (["test_linalg::test_qr_and_svd_match_numpy"],
                   ["test_linalg::test_gradient_of_svd_through_a_sign_invariant_loss"]),
    "conv3d": (["test_conv3d::test_conv3d_matches_numpy", "test_conv3d::test_conv3d_unbatched_and_padding_strings",
                "test_conv3d::test_conv3d_and_pools_on_16_bit_floats_match_numpy"],
               ["test_conv3d::test_conv3d_gradients_match_finite_differences",
                "test_conv3d::test_conv3d_float32_gradients_match_the_numpy_adjoints"]),
    "conv3d_backward_input": (["test_conv3d::test_conv3d_float32_gradients_match_the_numpy_adjoints",
                               "test_conv3d::test_conv_transpose3d_matches_numpy"],
                              ["test_conv3d::test_conv_transpose3d_gradients_match_finite_differences"]),
    "conv3d_backward_weight": (["test_conv3d::test_conv3d_float32_gradients_match_the_numpy_adjoints",
                                "test_conv3d::test_conv3d_gradients_match_finite_differences"], None),
    "max_pool3d": (["test_conv3d::test_max_pool3d_matches_numpy", "test_conv3d::test_conv3d_and_pools_on_16_bit_floats_match_numpy"],
                   ["test_conv3d::test_max_pool3d_gradients_match_finite_differences"]),
    "max_pool3d_backward": (["test_conv3d::test_max_pool3d_gradients_match_finite_differences"], None),
    "avg_pool3d": (["test_conv3d::test_avg_pool3d_matches_numpy", "test_conv3d::test_conv3d_and_pools_on_16_bit_floats_match_numpy"],
                   ["test_conv3d::test_avg_pool3d_gradients_match_finite_differences"]),
    "avg_pool3d_backward": (["test_conv3d::test_avg_pool3d_gradients_match_finite_differences"], None),
    "adaptive_avg_pool3d": (["test_conv3d::test_adaptive_avg_pool3d_matches_numpy", "test_conv3d::test_conv3d_and_pools_on_16_bit_floats_match_numpy"],
                            ["test_conv3d::test_adaptive_avg_pool3d_gradients_match_finite_differences"]),
    "adaptive_avg_pool3d_backward": (
        ["test_conv3d::test_adaptive_avg_pool3d_gradients_match_finite_differences"], None),
    "cat": (["test_nn_ops::test_cat_and_stack_match_numpy_with_gradients",
             "test_nn_ops::test_cat_promotes_and_reports_mismatched_shapes"],
            ["test_nn_ops::test_cat_and_stack_match_numpy_with_gradients"]),
    "slice": (["test_nn_ops::test_getitem_matches_numpy_with_gradients"],
              ["test_nn_ops::test_getitem_matches_numpy_with_gradients",
               "test_nn_ops::test_split_and_chunk_match_numpy_with_gradients"]),
    "slice_backward": (["test_nn_ops::test_getitem_matches_numpy_with_gradients"], None),
    "index_select": (["test_nn_ops::test_index_select_with_repeats_and_its_gradient"],
                     ["test_nn_ops::test_index_select_with_repeats_and_its_gradient"]),
    "index_add": (["test_nn_ops::test_index_select_with_repeats_and_its_gradient",
                   "test_op_coverage_gaps::test_index_add_and_scatter_add_match_numpy"],
                  ["test_op_coverage_gaps::test_index_add_and_scatter_add_match_numpy"]),
    "gather": (["test_indexing::test_gather_matches_numpy"], ["test_indexing::test_gather_scatter_gradients"]),
    "scatter": (["test_indexing::test_scatter_and_scatter_add_match_numpy"],
                ["test_indexing::test_gather_scatter_gradients"]),
    "scatter_add": (["test_indexing::test_scatter_and_scatter_add_match_numpy",
                     "test_op_coverage_gaps::test_index_add_and_scatter_add_match_numpy"],
                    ["test_indexing::test_gather_scatter_gradients"]),
    "slice_scatter": (["test_indexing::test_setitem_matches_numpy"], ["test_indexing::test_setitem_gradients"]),
    "index": (["test_indexing::test_advanced_getitem_matches_numpy",
               "test_indexing::test_advanced_getitem_non_adjacent_indices_go_first"],
              ["test_indexing::test_advanced_getitem_gradient_adds_up_repeats"]),
    "index_put": (["test_indexing::test_setitem_matches_numpy", "test_indexing::test_setitem_accumulate_and_index_put",
                   "test_op_coverage_gaps::test_index_put_accumulate_on_16_bit_floats"],
                  ["test_indexing::test_setitem_gradients"]),
    "argsort": (["test_sort_scan::test_sort_is_stable_and_matches_numpy",
                 "test_sort_scan::test_sort_nan_is_largest_and_integers_are_exact"], None),
    **{op: (["test_sort_scan::test_cumsum_cumprod_match_numpy",
             "test_op_coverage_gaps::test_scans_on_16_bit_floats_match_numpy"],
            ["test_sort_scan::test_scan_gradients_including_zeros"])
       for op in ("cumsum", "cumprod")},
    **{op: (["test_sort_scan::test_tril_triu"], ["test_sort_scan::test_tril_triu"]) for op in ("tril", "triu")},
    # A collective: it exists only between lazy replicas (there are no
    # replicas on the eager cpu device), so its tests run on lazy devices and
    # LAZY_ONLY names the test of its clear error elsewhere.
    "all_reduce": (["test_collectives::test_each_reduce_kind_matches_numpy",
                    "test_collectives::test_results_are_bitwise_identical_on_every_replica"], None),
    # Rounding and integer division (test_rounding_and_integer_division).
    **{op: (["test_rounding_and_integer_division::test_rounding_matches_numpy"],
            ["test_rounding_and_integer_division::test_gradients_match_finite_differences"])
       for op in ("sign", "floor", "ceil", "round", "trunc")},
    **{op: (["test_rounding_and_integer_division::test_integer_division_matches_python_semantics",
             "test_rounding_and_integer_division::test_integer_division_by_zero_raises",
             "test_rounding_and_integer_division::test_float_division_by_zero_gives_inf_and_nan"],
            ["test_rounding_and_integer_division::test_gradients_match_finite_differences"])
       for op in ("floor_divide", "remainder", "fmod")},
    # Inverse trigonometry and integer bitwise ops (test_surface_bitwise).
    **{op: (["test_surface_bitwise::test_inverse_trigonometry_matches_numpy",
             "test_surface_bitwise::test_inverse_trigonometry_fuses_into_a_chain_and_promotes_integers"],
            ["test_surface_bitwise::test_inverse_trigonometry_gradients"])
       for op in ("atan", "asin", "acos", "atan2")},
    **{op: (["test_surface_bitwise::test_integer_bitwise_ops_match_numpy",
             "test_surface_bitwise::test_mixed_operands_promote_and_floats_are_refused"], None)
       for op in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    **{op: (["test_surface_bitwise::test_shifts_match_numpy_including_counts_past_the_width"], None)
       for op in ("bitwise_left_shift", "bitwise_right_shift")},
    # gcd, nextafter and frexp's parts (test_surface_math_extra); lcm is composed from gcd.
    "gcd": (["test_surface_math_extra::test_gcd_and_lcm_match_python_math",
             "test_surface_math_extra::test_gcd_lcm_refuse_floats_and_nextafter_frexp_refuse_integers"], None),
    "nextafter": (["test_surface_math_extra::test_nextafter_matches_numpy"], None),
    **{op: (["test_surface_math_extra::test_frexp_matches_numpy_and_recomposes_exactly"],
            ["test_surface_math_extra::test_frexp_mantissa_gradient_is_grad_over_two_to_the_exponent"])
       for op in ("frexp_mantissa", "frexp_exponent")},
}

# Ops that cannot run on the eager cpu device, each with the test that its
# use there (or outside a replica) fails with a clear error.
LAZY_ONLY = {"all_reduce": "test_collectives::test_all_reduce_outside_a_replica_graph_names_the_problem"}

# How a test shows it runs on both devices: parametrized over "device", or its
# body (or a module helper it calls) building tensors on each.
BOTH_DEVICE_HELPERS = ("both_devices(", "DEVICES", "check_half(")


def resolve(ref):
    module_name, test_name = ref.split("::")
    module = importlib.import_module(module_name)
    test = getattr(module, test_name, None)
    assert callable(test), f"{ref}: no such test"
    return test


def runs_on_both_devices(test):
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and "device" in [a.strip() for a in mark.args[0].split(",")]:
            values = list(mark.args[1])
            return "cpu" in values and "lazy:0" in values
    source = inspect.getsource(test)
    return any(h in source for h in BOTH_DEVICE_HELPERS) or ("\"cpu\"" in source and "\"lazy:0\"" in source)


def test_the_binding_lists_the_op_table():
    names = _C._op_names()
    assert len(names) == len(set(names)) > 80
    assert names[0] == "device_data" and "matmul" in names and "index_put" in names


@pytest.mark.parametrize("op", _C._op_names())
def test_every_op_has_an_oracle_test_on_both_devices(op):
    assert op in COVERAGE, f"op {op!r} has no oracle test: add one and a row to COVERAGE"
    values, grads = COVERAGE[op]
    assert values, f"{op}: no value test"
    if op in LAZY_ONLY:
        for ref in values + [LAZY_ONLY[op]]:
            resolve(ref)
        return
    for ref in values + (grads or []):
        assert runs_on_both_devices(resolve(ref)), f"{op}: {ref} does not run on both cpu and lazy:0"


def test_no_row_names_an_op_the_table_lacks():
    assert sorted(set(COVERAGE) - set(_C._op_names())) == []
