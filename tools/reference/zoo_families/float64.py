"""transformers in float64 end to end, for checking the numpy float64 pass to ~1e-12 relative.

`model.to(torch.float64)` alone is not float64 end to end: transformers casts to float32 in
places (RoPE: `position_ids.float() * inv_freq.float()`, inv_freq computed with
`dtype=torch.float`; Gemma's RMSNorm `x.float()`; Llama's RMSNorm `.to(torch.float32)`), so
such a model agrees with a float64 reference only to float32 rounding (~1e-7 relative), which
hides nothing but also proves little. `Float64Mode` is a torch function mode that turns every
float32 request into float64 (`Tensor.float()`, `Tensor.to(torch.float32)`, `dtype=torch.float32`
arguments of factory functions); `float64_model` rebuilds the model under it (so non-persistent
buffers such as inv_freq are computed in float64) with the default dtype float64 and loads the
float32 model's parameters (exact values). The fixture's logits stay those of the float32 model.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode


def _f64(v: Any) -> Any:
    return torch.float64 if v is torch.float32 else v


class Float64Mode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.float:
            return args[0].to(torch.float64)
        if "dtype" in kwargs:
            kwargs["dtype"] = _f64(kwargs["dtype"])
        if func is torch.Tensor.to or func is torch.Tensor.type:
            args = tuple(_f64(a) for a in args)
        return func(*args, **kwargs)


@contextlib.contextmanager
def float64_everywhere():
    saved = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with Float64Mode():
            yield
    finally:
        torch.set_default_dtype(saved)


def float64_model(model_cls: Callable[[], Any], config, state_dict: dict[str, torch.Tensor]):
    """The same model, built and run in float64 (see the module docstring)."""
    import copy
    config = copy.deepcopy(config)
    config.dtype = torch.float64      # (read by Apertus' xIELU for its parameters; may be the string "float32")
    with float64_everywhere():
        m = model_cls()(config)
        missing, unexpected = m.load_state_dict({k: v.to(torch.float64) for k, v in state_dict.items()},
                                                strict=False)
        # tied heads are absent from state_dict() only if the model ties them itself
        assert not unexpected, unexpected
        assert not [k for k in missing if not k.endswith("lm_head.weight")], missing
        m = m.to(torch.float64).eval()
    for name, p in m.named_parameters():
        assert p.dtype == torch.float64, name
    return m


def float64_logits(model64, ids: list[int]):
    with float64_everywhere(), torch.no_grad():
        out = model64(input_ids=torch.tensor([ids], dtype=torch.long), use_cache=False).logits[0]
    assert out.dtype == torch.float64, out.dtype
    return out.numpy()
