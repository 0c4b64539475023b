"""Calculator: arithmetic and math functions, evaluated by walking the expression's AST (never ``eval``).

Python integers are unbounded, so ``9**9**9`` or ``factorial(10**6)`` would pin a CPU for minutes. Every
operation that can grow a number checks the size of its result *before* computing it and refuses
anything above ``MAX_INT_BITS``; floats overflow to an error on their own.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

MAX_INT_BITS = 12_000  # ~3,600 decimal digits; below Python's int→str limit of 4,300 digits
MAX_FACTORIAL = 1_000
MAX_EXPRESSION = 1_000

Number = int | float


class CalcError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


class Config(ApiModel):
    precision: int = Field(
        default=12, ge=1, le=17, description="Significant digits kept in non-integer results."
    )


class Input(ApiModel):
    expression: str = Field(
        min_length=1,
        max_length=MAX_EXPRESSION,
        description=(
            "A math expression, e.g. '2 * (3 + 4) ** 2', 'sqrt(2) / 2', 'log(100, 10)', 'factorial(20)'. "
            "Operators: + - * / // % ** and bitwise & | ^ << >> ~. Constants: pi, e, tau, inf."
        ),
    )


def _check_bits(bits: int) -> None:
    if bits > MAX_INT_BITS:
        raise CalcError(f"result too large (about {bits:,} bits; the limit is {MAX_INT_BITS:,})")


def _pow(a: Number, b: Number, mod: Number | None = None) -> Number:
    if mod is not None:
        if not (isinstance(a, int) and isinstance(b, int) and isinstance(mod, int)):
            raise CalcError("pow with a modulus needs integers")
        return pow(a, b, mod)
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        _check_bits(b * a.bit_length())
    result = a**b
    if isinstance(result, complex):
        raise CalcError("the result is a complex number")
    return result


def _mul(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        _check_bits(a.bit_length() + b.bit_length())
    return a * b


def _lshift(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int) and a and b > 0:
        _check_bits(a.bit_length() + b)
    return operator.lshift(a, b)


def _factorial(n: Number) -> int:
    if not isinstance(n, int) or n < 0:
        raise CalcError("factorial needs a non-negative integer")
    if n > MAX_FACTORIAL:
        raise CalcError(f"factorial({n}) is too large (the limit is {MAX_FACTORIAL})")
    return math.factorial(n)


def _comb_like(fn: Callable[..., int]) -> Callable[..., int]:
    def bounded(n: Number, k: Number | None = None) -> int:
        if not isinstance(n, int) or n > MAX_FACTORIAL * 10:
            raise CalcError(f"{fn.__name__} needs integers up to {MAX_FACTORIAL * 10}")
        return fn(n) if k is None else fn(n, k)

    return bounded


BIN_OPS: dict[type[ast.operator], Callable[[Any, Any], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: _pow,
    ast.LShift: _lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
UNARY_OPS: dict[type[ast.unaryop], Callable[[Any], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Invert: operator.invert,
}
CONSTANTS: dict[str, Number] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}
def _abs(x: Number) -> Number:
    return abs(x)  # the builtin's return type is generic; this states it for numbers


def _trunc(x: Number) -> int:
    return math.trunc(x)


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": _abs, "round": round, "min": min, "max": max, "pow": _pow,
    "sqrt": math.sqrt, "cbrt": math.cbrt, "isqrt": math.isqrt, "exp": math.exp,
    "log": math.log, "log10": math.log10, "log2": math.log2, "ln": math.log,
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "degrees": math.degrees, "radians": math.radians, "hypot": math.hypot,
    "floor": math.floor, "ceil": math.ceil, "trunc": _trunc,
    "factorial": _factorial, "gcd": math.gcd, "lcm": math.lcm,
    "comb": _comb_like(math.comb), "perm": _comb_like(math.perm),
}


def evaluate(expression: str) -> Number:
    """Evaluate an arithmetic expression. Raises :class:`CalcError` (or ArithmeticError) on refusal."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise CalcError(f"syntax error: {exc.msg}") from exc
    return _eval(tree.body)


def _eval(node: ast.AST) -> Number:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise CalcError(f"unsupported literal {node.value!r}")
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in BIN_OPS:
        return BIN_OPS[type(node.op)](_eval(node.left), _eval(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY_OPS:
        return UNARY_OPS[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Name):
        if node.id not in CONSTANTS:
            raise CalcError(f"unknown name '{node.id}'")
        return CONSTANTS[node.id]
    if isinstance(node, ast.Call):
        return _call(node)
    raise CalcError(f"unsupported syntax: {type(node).__name__}")


def _call(node: ast.Call) -> Number:
    if not isinstance(node.func, ast.Name):
        raise CalcError("only plain function calls such as sqrt(2) are allowed")
    if node.func.id not in FUNCTIONS:
        raise CalcError(f"unknown function '{node.func.id}'; available: {', '.join(sorted(FUNCTIONS))}")
    if node.keywords:
        raise CalcError("keyword arguments are not supported")
    args = [_eval(a) for a in node.args]
    try:
        result = FUNCTIONS[node.func.id](*args)
    except TypeError as exc:
        raise CalcError(f"{node.func.id}: {exc}") from exc
    if isinstance(result, int) and not isinstance(result, bool):
        _check_bits(result.bit_length())
    return result


def _present(value: Number, precision: int) -> int | float | str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return float(f"{value:.{precision}g}")
    return value


class CalculatorTool(ToolType[Config, Input]):
    slug = "calculator"
    name = "Calculator"
    description = "Evaluates arithmetic and math-function expressions exactly and safely."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Evaluate a math expression and return its numeric result. Use it for any arithmetic instead "
            "of computing in your head. Functions: " + ", ".join(sorted(FUNCTIONS)) + "."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        try:
            value = evaluate(input.expression)
        except (CalcError, ArithmeticError, ValueError) as exc:
            return ToolResult.fail(f"cannot evaluate '{input.expression}': {exc}")
        return ToolResult.ok({"expression": input.expression, "result": _present(value, config.precision)})


TOOL_TYPE = CalculatorTool()
