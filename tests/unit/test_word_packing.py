"""Sub-word elements stored as 32-bit words (``lowering/memory._pack_words``): the packed words
hold the elements' bytes exactly as the elements would lie in memory (little-endian), for
16-bit and 8-bit elements and 1, 2 or 4 words; built with llvmlite and run on the CPU."""

import ctypes

import numpy as np
import pytest
from llvmlite import ir

from numba_tile.lowering.memory import _pack_words


def _packer(etype: ir.Type, count: int, words: int):
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    i32 = ir.IntType(32)
    module = ir.Module(name="pack")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [etype.as_pointer(),
                                                             i32.as_pointer()]), "pack")
    b = ir.IRBuilder(fn.append_basic_block())
    vec = ir.Constant(ir.VectorType(etype, count), ir.Undefined)
    for k in range(count):
        vec = b.insert_element(vec, b.load(b.gep(fn.args[0], [ir.Constant(i32, k)])),
                               ir.Constant(i32, k))
    wty = i32 if words == 1 else ir.VectorType(i32, words)
    packed = _pack_words(b, vec, wty)
    for w in range(words):
        word = packed if words == 1 else b.extract_element(packed, ir.Constant(i32, w))
        b.store(word, b.gep(fn.args[1], [ir.Constant(i32, w)]))
    b.ret_void()
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    engine = llvm.create_mcjit_compiler(parsed, llvm.Target.from_default_triple()
                                        .create_target_machine())
    engine.finalize_object()
    cfn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
        engine.get_function_address("pack"))
    return cfn, engine


@pytest.mark.parametrize("etype, np_dt, count", [
    (ir.IntType(16), np.uint16, 8), (ir.IntType(16), np.uint16, 4), (ir.IntType(16), np.uint16, 2),
    (ir.HalfType(), np.float16, 8), (ir.HalfType(), np.float16, 4),
    (ir.IntType(8), np.uint8, 16), (ir.IntType(8), np.uint8, 8), (ir.IntType(8), np.uint8, 4)],
    ids=lambda v: str(v))
def test_packed_words_are_the_elements_bytes(etype, np_dt, count):
    words = count * np.dtype(np_dt).itemsize // 4
    cfn, _engine = _packer(etype, count, words)
    rng = np.random.default_rng()
    for _ in range(5):
        if np.dtype(np_dt).kind == "f":
            elems = rng.standard_normal(count).astype(np_dt)
        else:
            elems = rng.integers(0, np.iinfo(np_dt).max + 1, count, dtype=np.int64).astype(np_dt)
        out = np.zeros(words, np.uint32)
        cfn(elems.ctypes.data, out.ctypes.data)
        np.testing.assert_array_equal(out, elems.view(np.uint32))
