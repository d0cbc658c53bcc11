"""Attention as a PyTorch op with autograd: ``flash_attention(q, k, v, causal, scale)`` runs
``examples/attention.py``'s forward and ``attention_backward.py``'s backward through
``nt.torch_op`` (PyTorch custom ops) and ``register_autograd``, so a model calls it as it calls
``torch.nn.functional.scaled_dot_product_attention`` (same layout, ``(batch, heads, seq,
D)``, grouped-query heads allowed) and ``torch.compile`` traces it (the ops have fake
implementations). The backward is deterministic (no atomics).

On CUDA tensors the kernels run on the GPU, on the tensors' current stream; on CPU tensors in
numba_tile's interpreter. Checks the output and the gradients against PyTorch's own attention
in float64 (and, on a GPU, ``torch.compile`` of a small block that calls it).
"""

from __future__ import annotations

import numpy as np

import numba_tile as nt

try:
    from _common import check_result, require_torch
    import attention as fwd
    import attention_backward as bwd
except ImportError:
    from examples._common import check_result, require_torch
    from examples import attention as fwd
    from examples import attention_backward as bwd

torch = require_torch("attention_torch")
Tensor = torch.Tensor


@nt.torch_op("numba_tile_examples::attention_forward",
             fake=lambda q, k, v, causal, scale: (
                 torch.empty_like(q), q.new_empty(q.shape[:3], dtype=torch.float32)))
def attention_forward(q: Tensor, k: Tensor, v: Tensor, causal: bool,
                      scale: float) -> tuple[Tensor, Tensor]:
    """``(o, lse)``: the forward."""
    o = torch.empty_like(q)
    lse = q.new_empty(q.shape[:3], dtype=torch.float32)
    fwd.attention(q, k, v, o, lse, causal=causal, scale=scale)
    return o, lse


@nt.torch_op("numba_tile_examples::attention_backward",
             fake=lambda q, k, v, o, lse, do, causal, scale: (
                 torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)))
def attention_backward(q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, do: Tensor,
                       causal: bool, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """``(dq, dk, dv)`` from the forward's inputs and outputs and ``do``."""
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    bwd.attention_backward(q, k, v, o, lse, do.contiguous(), dq, dk, dv, causal=causal,
                           scale=scale)
    return dq, dk, dv


def _setup_context(ctx, inputs, output):
    q, k, v, causal, scale = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal, ctx.scale = causal, scale


def _backward(ctx, do, dlse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = attention_backward(q, k, v, o, lse, do, ctx.causal, ctx.scale)
    return dq, dk, dv, None, None


attention_forward.register_autograd(_backward, setup_context=_setup_context)


def flash_attention(q, k, v, causal: bool = False, scale: float | None = None):
    """``softmax(q k^T * scale) v`` of (batch, heads, seq, D) tensors (k and v with
    ``kv_heads`` dividing ``heads``), differentiable; ``scale`` defaults to ``D ** -0.5``."""
    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    return attention_forward(q, k, v, bool(causal), scale)[0]


def main(shape=(2, 4, 2, 77, 64)) -> None:
    device = "cuda" if torch.cuda.is_available() and nt.gpu_available() else "cpu"
    print("running on the GPU (PyTorch tensors)" if device == "cuda" else
          "no CUDA GPU found: running in the numba_tile interpreter (CPU, PyTorch tensors)")
    bsz, hq, hk, seq, d = shape
    gen = torch.Generator().manual_seed(int(np.random.default_rng().integers(2**31)))
    for causal in (False, True):
        q, k, v, do = (torch.randn(s, generator=gen).to(torch.float16).to(device)
                       for s in ((bsz, hq, seq, d), (bsz, hk, seq, d), (bsz, hk, seq, d),
                                 (bsz, hq, seq, d)))
        leaves = [x.clone().requires_grad_() for x in (q, k, v)]
        out = flash_attention(*leaves, causal=causal)
        out.backward(do)
        ref = [x.double().cpu().requires_grad_() for x in (q, k, v)]
        want = torch.nn.functional.scaled_dot_product_attention(
            *ref, is_causal=causal, enable_gqa=hq != hk)
        want.backward(do.double().cpu())
        detail = f"q {tuple(q.shape)}, k {tuple(k.shape)}, causal={causal}, "
        check_result("attention_torch", out.detach().double().cpu().numpy(),
                     want.detach().numpy(), rtol=2e-2, atol=4e-3, detail="o, " + detail)
        for name, got, r in zip(("dq", "dk", "dv"), leaves, ref):
            check_result("attention_torch", got.grad.double().cpu().numpy(), r.grad.numpy(),
                         rtol=2e-2, atol=1e-2, detail=f"{name}, " + detail)
    if device == "cuda":                  # torch.compile traces the op through its fake
        block = torch.compile(lambda q, k, v: flash_attention(q, k, v, causal=True) * 2.0,
                              fullgraph=True)
        q, k, v = (torch.randn(1, 2, 128, 64, device=device, dtype=torch.bfloat16)
                   for _ in range(3))
        want = 2.0 * torch.nn.functional.scaled_dot_product_attention(
            q.double(), k.double(), v.double(), is_causal=True)
        check_result("attention_torch", block(q, k, v).double().cpu().numpy(),
                     want.cpu().numpy(), rtol=5e-2, atol=3e-2, detail="torch.compile, ")


if __name__ == "__main__":
    main()
