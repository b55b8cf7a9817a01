"""torch.nn.utils.parameters_to_vector / vector_to_parameters."""
import lazyscope


def parameters_to_vector(parameters):
    """Every parameter flattened and concatenated, in order (one device)."""
    params = list(parameters)
    if not params:
        raise ValueError("parameters_to_vector: no parameters given")
    device = params[0].device
    for p in params:
        if p.device != device:
            raise lazyscope.DeviceMismatchError(f"parameters_to_vector: found parameters on {device} and "
                                                f"{p.device}; move them to one device" + lazyscope._C._at_user_line())
    return lazyscope.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of ``vec`` into each parameter, in place."""
    if not isinstance(vec, lazyscope.Tensor) or vec.dim() != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got {type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if vec.numel() != total:
        raise lazyscope.ShapeError(f"vector_to_parameters: the vector has {vec.numel()} elements, the parameters "
                                   f"{total}" + lazyscope._C._at_user_line())
    offset = 0
    with lazyscope.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(tuple(p.shape)))
            offset += n
