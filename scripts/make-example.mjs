#!/usr/bin/env node
// Builds examples/long-conversation.json: a long coding-agent session in OpenAI chat-completions
// shape, written for this project. A coding agent fixes a rounding bug in "ledgerline", a
// fictional Python billing service, over eight user turns: it reads source files, greps, runs
// tests (with stack traces), reads two very large logs, patches code and writes the pull-request
// description. Everything variable (ids, timestamps, amounts, durations) comes from a seeded
// PRNG, so the output is byte-for-byte reproducible:
//
//   node scripts/make-example.mjs            # writes examples/long-conversation.json
//   node scripts/make-example.mjs --check    # exits 1 if the committed file is out of date

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const OUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'examples', 'long-conversation.json');

// ---------------------------------------------------------------------------------------------
// Seeded randomness (mulberry32) and small helpers.

let seed = 0x5eed_1e6e;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const chance = (p) => rand() < p;
const pad = (n, w, c = '0') => String(n).padStart(w, c);
const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const HEX = '0123456789abcdef';
const token = (n, alphabet = ALNUM) => Array.from({ length: n }, () => alphabet[int(0, alphabet.length - 1)]).join('');
const BT = '`';
/** Lets hand-written Markdown use § for a backtick inside template literals. */
const md = (s) => s.replaceAll('§', BT);

/** `cat -n` style line numbers, as the read_file tool prints them. */
function numbered(text, start = 1) {
  const lines = text.replace(/\n$/, '').split('\n');
  const w = String(start + lines.length - 1).length;
  return lines.map((l, i) => `${pad(start + i, Math.max(w, 4), ' ')}\t${l}`).join('\n');
}
function fileResult(path, text, start = 1) {
  const n = text.replace(/\n$/, '').split('\n').length;
  return `${path} (lines ${start}-${start + n - 1} of ${start + n - 1})\n${numbered(text, start)}`;
}
const money = (lo, hi) => (int(lo * 100, hi * 100) / 100).toFixed(2);

/** A clock that moves forward by small random steps (for logs). */
function clock(startIso) {
  let t = Date.parse(startIso);
  return {
    tick(minMs, maxMs) {
      t += int(minMs, maxMs);
      return new Date(t).toISOString();
    },
    now: () => new Date(t).toISOString(),
  };
}

// ---------------------------------------------------------------------------------------------
// The project's source files (hand-written).

const MONEY_PY = String.raw`"""Money values: an exact Decimal amount in one currency.

Amounts stay exact while a computation runs and are rounded to the
currency's minor unit only where a value becomes visible: a line on an
invoice, a ledger entry, a payment request. ${BT}Money.round${BT} is the one place
that knows the rounding rule; ${BT}Money.allocate${BT} is the one place that splits
an amount into parts that must add back up exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Iterable, Sequence

from ledgerline.currency import Currency, get_currency

__all__ = ["Money", "MoneyError", "sum_money"]


class MoneyError(ValueError):
    """Amounts of different currencies were combined, or an amount is malformed."""


@dataclass(frozen=True, slots=True)
class Money:
    amount: Decimal
    currency: Currency

    # -- construction -----------------------------------------------------

    @classmethod
    def of(cls, amount: str | int | Decimal, code: str) -> Money:
        """A rounded amount from user input: Money.of("12.50", "EUR")."""
        if isinstance(amount, float):
            raise MoneyError("floats are not accepted; pass a str or a Decimal")
        return cls(Decimal(amount), get_currency(code)).round()

    @classmethod
    def zero(cls, code: str) -> Money:
        return cls(Decimal(0), get_currency(code))

    # -- rounding ---------------------------------------------------------

    @property
    def exponent(self) -> Decimal:
        return Decimal(1).scaleb(-self.currency.minor_units)

    def round(self, rounding: str = ROUND_HALF_UP) -> Money:
        return Money(self.amount.quantize(self.exponent, rounding=rounding), self.currency)

    def is_rounded(self) -> bool:
        return self.amount == self.amount.quantize(self.exponent)

    # -- arithmetic -------------------------------------------------------

    def _check(self, other: Money) -> None:
        if not isinstance(other, Money):
            raise TypeError(f"expected Money, got {type(other).__name__}")
        if other.currency != self.currency:
            raise MoneyError(f"currency mismatch: {self.currency.code} vs {other.currency.code}")

    def __add__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._check(other)
        return Money(self.amount - other.amount, self.currency)

    def __mul__(self, factor: Decimal | int) -> Money:
        if isinstance(factor, (Money, float)):
            raise TypeError(f"cannot multiply Money by {type(factor).__name__}")
        return Money(self.amount * Decimal(factor), self.currency)

    __rmul__ = __mul__

    def __neg__(self) -> Money:
        return Money(-self.amount, self.currency)

    def __lt__(self, other: Money) -> bool:
        self._check(other)
        return self.amount < other.amount

    def __le__(self, other: Money) -> bool:
        self._check(other)
        return self.amount <= other.amount

    def __bool__(self) -> bool:
        return bool(self.amount)

    # -- splitting --------------------------------------------------------

    def allocate(self, weights: Sequence[Decimal | int]) -> list[Money]:
        """Split this amount in proportion to ${BT}weights${BT}; the parts sum exactly.

        Each part is rounded down to the minor unit, then the leftover minor
        units go one by one to the parts with the largest remainders (ties go
        to the earlier part). ${BT}self${BT} must already be rounded.
        """
        if not weights:
            raise MoneyError("allocate() needs at least one weight")
        if not self.is_rounded():
            raise MoneyError(f"allocate() needs a rounded amount, got {self.amount}")
        total = sum(Decimal(w) for w in weights)
        unit = self.exponent
        units = int(self.amount / unit)
        raw = [Decimal(units) * Decimal(w) / total for w in weights]
        parts = [int(r) for r in raw]
        leftover = units - sum(parts)
        order = sorted(range(len(raw)), key=lambda i: (raw[i] - parts[i], -i), reverse=True)
        for i in order[:leftover]:
            parts[i] += 1
        return [Money(Decimal(p) * unit, self.currency) for p in parts]

    # -- display ----------------------------------------------------------

    def __str__(self) -> str:
        return f"{self.amount:,.{self.currency.minor_units}f} {self.currency.code}"

    def __repr__(self) -> str:
        return f"Money({str(self.amount)!r}, {self.currency.code!r})"


def sum_money(values: Iterable[Money], code: str) -> Money:
    """The sum of ${BT}values${BT} (zero in ${BT}code${BT} when there are none)."""
    total = Money.zero(code)
    for v in values:
        total = total + v
    return total
`;

const DISCOUNTS_PY = String.raw`"""Invoice discounts, percentage or fixed, applied to the lines of an invoice.

A discount applies to every line, or to the lines whose SKU is listed in
${BT}Discount.applies_to${BT}. The amount taken off each line is stored on the line
(${BT}InvoiceLine.discount_amount${BT}) because the PDF and the API both show it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from enum import Enum

from ledgerline.billing.model import InvoiceLine
from ledgerline.money import Money, MoneyError, sum_money

__all__ = ["Discount", "DiscountKind", "apply_discount", "invoice_discount"]

_HUNDRED = Decimal(100)


class DiscountKind(str, Enum):
    PERCENTAGE = "percentage"
    FIXED = "fixed"


@dataclass(frozen=True, slots=True)
class Discount:
    kind: DiscountKind
    value: Decimal  # 0 < value <= 100 for percentages; an amount for fixed discounts
    code: str | None = None  # the promotion code, printed on the invoice
    applies_to: frozenset[str] | None = None  # SKUs; None means every line

    def __post_init__(self) -> None:
        if self.value <= 0:
            raise MoneyError(f"discount value must be positive, got {self.value}")
        if self.kind is DiscountKind.PERCENTAGE and self.value > _HUNDRED:
            raise MoneyError(f"a percentage discount cannot exceed 100, got {self.value}")


def eligible(line: InvoiceLine, discount: Discount) -> bool:
    if line.is_credit:
        return False
    return discount.applies_to is None or line.sku in discount.applies_to


def apply_discount(lines: list[InvoiceLine], discount: Discount | None) -> list[InvoiceLine]:
    """The lines with ${BT}discount_amount${BT} set for ${BT}discount${BT}. Lines are not mutated."""
    if discount is None:
        return list(lines)
    targets = [i for i, line in enumerate(lines) if eligible(line, discount)]
    if not targets:
        return list(lines)
    out = list(lines)
    if discount.kind is DiscountKind.PERCENTAGE:
        rate = discount.value / _HUNDRED
        for i in targets:
            line = lines[i]
            out[i] = replace(line, discount_amount=(line.net * rate).round())
    else:
        code = lines[targets[0]].net.currency.code
        eligible_net = sum_money((lines[i].net for i in targets), code)
        fixed = Money.of(discount.value, code)
        if eligible_net < fixed:
            fixed = eligible_net
        parts = fixed.allocate([lines[i].net.amount for i in targets])
        for i, part in zip(targets, parts):
            out[i] = replace(lines[i], discount_amount=part)
    return out


def invoice_discount(lines: list[InvoiceLine], discount: Discount | None) -> Money:
    """The discount printed in the invoice footer, computed on the eligible subtotal."""
    code = lines[0].net.currency.code
    if discount is None:
        return Money.zero(code)
    eligible_net = sum_money((line.net for line in lines if eligible(line, discount)), code)
    if discount.kind is DiscountKind.PERCENTAGE:
        return (eligible_net * (discount.value / _HUNDRED)).round()
    fixed = Money.of(discount.value, code)
    return eligible_net if eligible_net < fixed else fixed
`;

const TOTALS_PY = String.raw`"""Invoice totals: subtotal, discount, tax and the amount due."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ledgerline.billing.discounts import Discount, apply_discount
from ledgerline.billing.model import InvoiceLine
from ledgerline.billing.tax import TaxRate, compute_tax
from ledgerline.money import Money, sum_money

__all__ = ["InvoiceTotals", "compute_invoice_totals"]


@dataclass(frozen=True, slots=True)
class InvoiceTotals:
    subtotal: Money
    discount: Money
    net: Money
    tax: Money
    total: Money
    lines: tuple[InvoiceLine, ...]

    def as_dict(self) -> dict[str, str]:
        return {
            "subtotal": str(self.subtotal.amount),
            "discount": str(self.discount.amount),
            "net": str(self.net.amount),
            "tax": str(self.tax.amount),
            "total": str(self.total.amount),
            "currency": self.total.currency.code,
        }


def compute_invoice_totals(
    lines: list[InvoiceLine],
    discount: Discount | None = None,
    tax_rates: Mapping[str, TaxRate] | None = None,
) -> InvoiceTotals:
    """Totals of an invoice. Every amount returned is rounded to the minor unit.

    The discount is applied line by line first, so that tax is computed on
    discounted line amounts (as the tax authorities we file with require).
    """
    if not lines:
        raise ValueError("an invoice needs at least one line")
    code = lines[0].net.currency.code
    discounted = apply_discount(lines, discount)
    subtotal = sum_money((line.net for line in discounted), code)
    discount_total = sum_money((line.discount_amount for line in discounted), code)
    net = subtotal - discount_total
    tax = compute_tax(discounted, tax_rates or {})
    return InvoiceTotals(
        subtotal=subtotal,
        discount=discount_total,
        net=net,
        tax=tax,
        total=(net + tax).round(),
        lines=tuple(discounted),
    )
`;

const PDF_PY = String.raw`"""Renders an invoice to PDF (ReportLab platypus).

The layout follows the brand guide v3: a header band with the logo and the
issuer's address, the customer block, the line table, a totals block on
the right and the payment instructions in the footer.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import Image, Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

from ledgerline.billing.discounts import Discount, invoice_discount
from ledgerline.billing.model import Customer, Invoice, InvoiceLine
from ledgerline.billing.totals import InvoiceTotals, compute_invoice_totals
from ledgerline.i18n import format_date, gettext as _
from ledgerline.money import Money

log = logging.getLogger(__name__)

BRAND_BLUE = colors.HexColor("#1f4e79")
LIGHT_GREY = colors.HexColor("#f2f2f2")
MARGIN = 18 * mm


@dataclass(frozen=True)
class RenderOptions:
    locale: str = "en_GB"
    show_line_discounts: bool = True
    logo_path: str | None = "assets/logo-invoice.png"
    watermark: str | None = None


def _styles() -> dict[str, ParagraphStyle]:
    base = getSampleStyleSheet()
    return {
        "title": ParagraphStyle("title", parent=base["Heading1"], textColor=BRAND_BLUE, fontSize=18),
        "small": ParagraphStyle("small", parent=base["Normal"], fontSize=8, leading=10),
        "normal": ParagraphStyle("normal", parent=base["Normal"], fontSize=9.5, leading=12),
        "right": ParagraphStyle("right", parent=base["Normal"], fontSize=9.5, alignment=2),
        "bold_right": ParagraphStyle("bold_right", parent=base["Normal"], fontSize=10, alignment=2,
                                     fontName="Helvetica-Bold"),
    }


def _fmt(m: Money, locale: str) -> str:
    return m.format(locale) if hasattr(m, "format") else str(m)


def _customer_block(customer: Customer, st: dict[str, ParagraphStyle]) -> list[Paragraph]:
    rows = [customer.name, *customer.address_lines, customer.country_name]
    if customer.vat_number:
        rows.append(_("VAT number: {}").format(customer.vat_number))
    return [Paragraph(r, st["normal"]) for r in rows if r]


def _line_rows(lines: tuple[InvoiceLine, ...], opts: RenderOptions) -> list[list[str]]:
    header = [_("Item"), _("Qty"), _("Unit price"), _("Amount")]
    if opts.show_line_discounts:
        header.insert(3, _("Discount"))
    rows = [header]
    for line in lines:
        row = [
            line.description,
            f"{line.quantity:g}",
            _fmt(line.unit_price, opts.locale),
            _fmt(line.net, opts.locale),
        ]
        if opts.show_line_discounts:
            row.insert(3, "-" + _fmt(line.discount_amount, opts.locale) if line.discount_amount else "")
        rows.append(row)
    return rows


def _totals_rows(totals: InvoiceTotals, footer_discount: Money, opts: RenderOptions) -> list[list[str]]:
    rows = [[_("Subtotal"), _fmt(totals.subtotal, opts.locale)]]
    if footer_discount:
        rows.append([_("Discount"), "-" + _fmt(footer_discount, opts.locale)])
    rows.append([_("Net"), _fmt(totals.subtotal - footer_discount, opts.locale)])
    rows.append([_("Tax"), _fmt(totals.tax, opts.locale)])
    rows.append([_("Total due"), _fmt(totals.total, opts.locale)])
    return rows


def _table(rows: list[list[str]], widths: list[float], header: bool = True) -> Table:
    t = Table(rows, colWidths=widths, repeatRows=1 if header else 0)
    style = [
        ("FONT", (0, 0), (-1, -1), "Helvetica", 9),
        ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ("BOTTOMPADDING", (0, 0), (-1, -1), 4),
    ]
    if header:
        style += [
            ("BACKGROUND", (0, 0), (-1, 0), BRAND_BLUE),
            ("TEXTCOLOR", (0, 0), (-1, 0), colors.white),
            ("FONT", (0, 0), (-1, 0), "Helvetica-Bold", 9),
            ("ROWBACKGROUNDS", (0, 1), (-1, -1), [colors.white, LIGHT_GREY]),
        ]
    t.setStyle(TableStyle(style))
    return t


def render_invoice(invoice: Invoice, discount: Discount | None = None, opts: RenderOptions | None = None) -> bytes:
    """The invoice as PDF bytes."""
    opts = opts or RenderOptions()
    st = _styles()
    totals = compute_invoice_totals(list(invoice.lines), discount, invoice.tax_rates)
    footer_discount = invoice_discount(list(invoice.lines), discount)
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN,
                            topMargin=MARGIN, bottomMargin=MARGIN,
                            title=_("Invoice {}").format(invoice.number), author=invoice.issuer.name)
    story: list = []
    if opts.logo_path:
        story.append(Image(opts.logo_path, width=42 * mm, height=14 * mm, hAlign="LEFT"))
    story.append(Paragraph(_("Invoice {}").format(invoice.number), st["title"]))
    story.append(Paragraph(_("Issued {}").format(format_date(invoice.issued_on, opts.locale)), st["small"]))
    if invoice.due_on:
        story.append(Paragraph(_("Due {}").format(format_date(invoice.due_on, opts.locale)), st["small"]))
    story.append(Spacer(1, 6 * mm))
    story.extend(_customer_block(invoice.customer, st))
    story.append(Spacer(1, 8 * mm))
    widths = [80 * mm, 15 * mm, 25 * mm, 22 * mm, 28 * mm] if opts.show_line_discounts else \
        [95 * mm, 15 * mm, 30 * mm, 30 * mm]
    story.append(_table(_line_rows(totals.lines, opts), widths))
    story.append(Spacer(1, 4 * mm))
    totals_table = _table(_totals_rows(totals, footer_discount, opts), [40 * mm, 30 * mm], header=False)
    totals_table.hAlign = "RIGHT"
    story.append(totals_table)
    if discount and discount.code:
        story.append(Paragraph(_("Promotion code {} applied").format(discount.code), st["small"]))
    story.append(Spacer(1, 10 * mm))
    story.append(Paragraph(invoice.issuer.payment_instructions, st["small"]))
    if totals.discount != footer_discount:
        log.warning("invoice %s: line discounts sum to %s but footer shows %s",
                    invoice.number, totals.discount, footer_discount)
    doc.build(story)
    return buf.getvalue()


def render_credit_note(invoice: Invoice, reason: str, opts: RenderOptions | None = None) -> bytes:
    """A credit note cancelling ${BT}invoice${BT} in full."""
    opts = opts or RenderOptions()
    st = _styles()
    buf = io.BytesIO()
    doc = SimpleDocTemplate(buf, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN,
                            topMargin=MARGIN, bottomMargin=MARGIN)
    story = [
        Paragraph(_("Credit note for invoice {}").format(invoice.number), st["title"]),
        Paragraph(_("Issued {}").format(format_date(date.today(), opts.locale)), st["small"]),
        Spacer(1, 6 * mm),
        *_customer_block(invoice.customer, st),
        Spacer(1, 6 * mm),
        Paragraph(_("Reason: {}").format(reason), st["normal"]),
        Paragraph(_("Amount credited: {}").format(_fmt(invoice.total, opts.locale)), st["bold_right"]),
    ]
    doc.build(story)
    return buf.getvalue()


def _quantity_label(q: Decimal) -> str:
    return f"{q:g}" if q == q.to_integral() else f"{q:.3f}".rstrip("0")
`;

const TEST_TOTALS_PY = String.raw`from decimal import Decimal

import pytest

from ledgerline.billing.discounts import Discount, DiscountKind
from ledgerline.billing.model import InvoiceLine
from ledgerline.billing.tax import TaxRate
from ledgerline.billing.totals import compute_invoice_totals
from ledgerline.money import Money

EUR = "EUR"


def line(net: str, sku: str = "SKU-1", qty: str = "1", tax: str = "standard", credit: bool = False) -> InvoiceLine:
    amount = Money.of(net, EUR)
    return InvoiceLine(
        sku=sku,
        description=f"Item {sku}",
        quantity=Decimal(qty),
        unit_price=Money.of(Decimal(net) / Decimal(qty), EUR),
        net=amount,
        tax_code=tax,
        discount_amount=Money.zero(EUR),
        is_credit=credit,
    )


RATES = {"standard": TaxRate("standard", Decimal("0.20")), "reduced": TaxRate("reduced", Decimal("0.05"))}


def test_single_line_no_discount():
    t = compute_invoice_totals([line("100.00")], None, RATES)
    assert t.subtotal == Money.of("100.00", EUR)
    assert t.discount == Money.zero(EUR)
    assert t.tax == Money.of("20.00", EUR)
    assert t.total == Money.of("120.00", EUR)


def test_percentage_discount_single_line():
    d = Discount(DiscountKind.PERCENTAGE, Decimal("10"))
    t = compute_invoice_totals([line("59.99")], d, RATES)
    assert t.discount == Money.of("6.00", EUR)
    assert t.net == Money.of("53.99", EUR)


def test_fixed_discount_is_capped_at_eligible_net():
    d = Discount(DiscountKind.FIXED, Decimal("500"))
    t = compute_invoice_totals([line("120.00"), line("30.00", sku="SKU-2")], d, RATES)
    assert t.discount == Money.of("150.00", EUR)
    assert t.net == Money.zero(EUR)


def test_fixed_discount_split_sums_exactly():
    d = Discount(DiscountKind.FIXED, Decimal("10"))
    lines = [line("33.33"), line("33.33", sku="SKU-2"), line("33.34", sku="SKU-3")]
    t = compute_invoice_totals(lines, d, RATES)
    assert sum(l.discount_amount.amount for l in t.lines) == Decimal("10.00")


def test_discount_only_on_listed_skus():
    d = Discount(DiscountKind.PERCENTAGE, Decimal("50"), applies_to=frozenset({"SKU-2"}))
    t = compute_invoice_totals([line("10.00"), line("20.00", sku="SKU-2")], d, RATES)
    assert [l.discount_amount for l in t.lines] == [Money.zero(EUR), Money.of("10.00", EUR)]


def test_credit_lines_are_never_discounted():
    d = Discount(DiscountKind.PERCENTAGE, Decimal("25"))
    t = compute_invoice_totals([line("80.00"), line("-20.00", sku="REFUND", credit=True)], d, RATES)
    assert t.discount == Money.of("20.00", EUR)
    assert t.subtotal == Money.of("60.00", EUR)


@pytest.mark.parametrize(
    "nets, pct, expected_discount",
    [
        (["10.00"], "15", "1.50"),
        (["19.99", "5.01"], "20", "5.00"),
        (["0.99", "0.99", "0.99"], "50", "1.50"),
        (["1250.00", "310.40"], "7.5", "117.03"),
    ],
)
def test_percentage_discount_table(nets, pct, expected_discount):
    lines = [line(n, sku=f"SKU-{i}") for i, n in enumerate(nets)]
    t = compute_invoice_totals(lines, Discount(DiscountKind.PERCENTAGE, Decimal(pct)), RATES)
    assert t.discount == Money.of(expected_discount, EUR)


def test_reduced_rate_lines():
    t = compute_invoice_totals([line("40.00", tax="reduced"), line("60.00", sku="SKU-2")], None, RATES)
    assert t.tax == Money.of("14.00", EUR)


def test_empty_invoice_is_rejected():
    with pytest.raises(ValueError, match="at least one line"):
        compute_invoice_totals([], None, RATES)
`;

const NIGHTLY_PY = String.raw`"""Nightly reconciliation: invoices issued vs payments received.

Runs at 02:00 UTC from the scheduler. For every invoice marked paid in the
last 35 days, it compares the amount due with the sum of the payments
allocated to it, and files a mismatch when they differ. Mismatches go to
the ${BT}reconcile_mismatch${BT} table and, above ${BT}ALERT_THRESHOLD${BT}, to the finance
channel.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from typing import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from ledgerline.db import models as m
from ledgerline.db.session import session_scope
from ledgerline.fx import rate_on
from ledgerline.notify import post_to_channel

log = logging.getLogger("reconcile.nightly")

BATCH_SIZE = 500
LOOKBACK = timedelta(days=35)
ALERT_THRESHOLD = 25  # mismatches per run before finance is paged
FX_TOLERANCE = Decimal("0.02")  # payments converted at the bank's rate


@dataclass(frozen=True)
class Mismatch:
    invoice_id: int
    invoice_number: str
    customer_ref: str
    expected: Decimal
    received: Decimal
    currency: str
    reason: str

    @property
    def delta(self) -> Decimal:
        return self.received - self.expected


def _batches(session: Session, since: datetime) -> Iterator[list[m.Invoice]]:
    last_id = 0
    while True:
        rows = session.scalars(
            select(m.Invoice)
            .where(m.Invoice.paid_at >= since, m.Invoice.id > last_id)
            .order_by(m.Invoice.id)
            .limit(BATCH_SIZE)
        ).all()
        if not rows:
            return
        yield list(rows)
        last_id = rows[-1].id


def _received(invoice: m.Invoice) -> Decimal:
    total = Decimal(0)
    for alloc in invoice.payment_allocations:
        amount = alloc.amount
        if alloc.currency != invoice.currency:
            amount = (amount * rate_on(alloc.currency, invoice.currency, alloc.received_at)).quantize(Decimal("0.01"))
        total += amount
    return total


def check_invoice(invoice: m.Invoice) -> Mismatch | None:
    expected = invoice.total_due
    received = _received(invoice)
    if received == expected:
        return None
    cross_currency = any(a.currency != invoice.currency for a in invoice.payment_allocations)
    if cross_currency and abs(received - expected) <= FX_TOLERANCE:
        reason = "fx_rounding"
    elif received < expected:
        reason = "underpaid"
    else:
        reason = "amount_mismatch"
    return Mismatch(invoice.id, invoice.number, invoice.customer.ref, expected, received, invoice.currency, reason)


def run(now: datetime | None = None) -> list[Mismatch]:
    now = now or datetime.now(timezone.utc)
    run_id = f"rc-{now:%Y%m%d}"
    started = time.monotonic()
    since = now - LOOKBACK
    found: list[Mismatch] = []
    with session_scope() as session:
        for n, batch in enumerate(_batches(session, since), start=1):
            before = len(found)
            for invoice in batch:
                mm = check_invoice(invoice)
                if mm is None:
                    continue
                found.append(mm)
                log.warning(
                    "invoice=%s customer=%s expected=%s received=%s delta=%s currency=%s reason=%s",
                    mm.invoice_number, mm.customer_ref, mm.expected, mm.received, mm.delta, mm.currency, mm.reason,
                )
                session.add(m.ReconcileMismatch(run_id=run_id, invoice_id=mm.invoice_id, delta=mm.delta,
                                                reason=mm.reason))
            log.info("run_id=%s batch=%d invoices=%d mismatches=%d", run_id, n, len(batch), len(found) - before)
    took = time.monotonic() - started
    log.info("run_id=%s done invoices_checked=%s mismatches=%d took=%.1fs", run_id, "?", len(found), took)
    real = [mm for mm in found if mm.reason != "fx_rounding"]
    if len(real) >= ALERT_THRESHOLD:
        post_to_channel("finance-alerts", f"Reconciliation {run_id}: {len(real)} mismatches need review")
    return found
`;

const CHANGELOG_HEAD = md(`# Changelog

All notable changes to ledgerline are documented here. The format follows
Keep a Changelog, and the project uses calendar versioning (YYYY.MM.patch).

## [Unreleased]

`);

const DOCS_DISCOUNTS_MD = md(`# Discounts

ledgerline supports two kinds of discount on an invoice: **percentage** and
**fixed**. A discount is attached when the invoice is drafted, either directly
(§discount=§ on §POST /v2/invoices§) or through a promotion code that the
checkout resolves to a discount.

## Percentage discounts

A percentage discount takes the same share off every eligible line. The value
is a number greater than 0 and at most 100; fractional percentages such as
§7.5§ are allowed.

§§§json
{ "discount": { "kind": "percentage", "value": "15", "code": "SPRING15" } }
§§§

Each line's discount is shown in the *Discount* column of the PDF and in
§lines[].discount_amount§ in the API. The footer shows the invoice discount.

## Fixed discounts

A fixed discount takes an amount off the eligible lines together. The amount is
split across the lines in proportion to their net amounts, so that the parts
add up exactly to the discount. A fixed discount larger than the eligible
subtotal is capped at the subtotal: an invoice never goes negative because of
a discount.

## Which lines are eligible

- every line, unless §applies_to§ lists SKUs; then only lines with those SKUs;
- never credit lines (refunds, goodwill credits), whatever §applies_to§ says.

## Tax

Tax is computed on the discounted line amounts, line by line, with each line's
tax code. This is what the tax authorities we file with require: a discount
reduces the taxable base of the lines it applies to.

## Rounding

All amounts are rounded to the currency's minor unit (cents for EUR, USD and
GBP; no decimals for JPY) with half-up rounding, at the point where they
become visible: line amounts, line discounts, tax per rate and the total.

## API reference

| field | type | notes |
|---|---|---|
| §discount.kind§ | §"percentage"§ or §"fixed"§ | required |
| §discount.value§ | decimal string | required; §0 < value <= 100§ for percentages |
| §discount.code§ | string | optional; printed on the invoice |
| §discount.applies_to§ | array of SKUs | optional; default: all lines |
`);

const TAX_PY = String.raw`"""Tax on invoice lines.

Each line carries a tax code (${BT}standard${BT}, ${BT}reduced${BT}, ${BT}zero${BT}, ${BT}exempt${BT},
${BT}reverse_charge${BT}). Tax is computed per rate on the sum of the discounted net
amounts of the lines with that rate, and rounded once per rate: the method
our filings use. Reverse-charge and exempt lines carry no tax but are listed
separately on the invoice.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable, Mapping

from ledgerline.billing.model import InvoiceLine
from ledgerline.money import Money, sum_money

__all__ = ["TaxRate", "TaxBreakdown", "compute_tax", "tax_breakdown", "UnknownTaxCode"]

NO_TAX_CODES = frozenset({"zero", "exempt", "reverse_charge"})


class UnknownTaxCode(KeyError):
    """A line names a tax code that has no rate for the invoice's jurisdiction."""


@dataclass(frozen=True, slots=True)
class TaxRate:
    code: str
    rate: Decimal  # 0.20 for 20 %
    label: str | None = None

    def __post_init__(self) -> None:
        if not (Decimal(0) <= self.rate < Decimal(1)):
            raise ValueError(f"tax rate must be in [0, 1), got {self.rate}")


@dataclass(frozen=True, slots=True)
class TaxBreakdown:
    code: str
    rate: Decimal
    base: Money
    tax: Money


def _taxable_base(lines: Iterable[InvoiceLine]) -> dict[str, list[Money]]:
    by_code: dict[str, list[Money]] = defaultdict(list)
    for line in lines:
        by_code[line.tax_code].append(line.net - line.discount_amount)
    return by_code


def tax_breakdown(lines: list[InvoiceLine], rates: Mapping[str, TaxRate]) -> list[TaxBreakdown]:
    """One row per tax code used on the invoice, in a stable order."""
    if not lines:
        return []
    code = lines[0].net.currency.code
    out: list[TaxBreakdown] = []
    for tax_code, amounts in sorted(_taxable_base(lines).items()):
        base = sum_money(amounts, code)
        if tax_code in NO_TAX_CODES:
            out.append(TaxBreakdown(tax_code, Decimal(0), base, Money.zero(code)))
            continue
        try:
            rate = rates[tax_code]
        except KeyError:
            raise UnknownTaxCode(tax_code) from None
        out.append(TaxBreakdown(tax_code, rate.rate, base, (base * rate.rate).round()))
    return out


def compute_tax(lines: list[InvoiceLine], rates: Mapping[str, TaxRate]) -> Money:
    """Total tax of the invoice: the sum of the per-rate rounded amounts."""
    if not lines:
        raise ValueError("no lines")
    code = lines[0].net.currency.code
    tax = Money.zero(code)
    for row in tax_breakdown(lines, rates):
        tax += row.tax
    return tax
`;

const FX_PY = String.raw`"""Foreign-exchange rates for payments received in another currency.

Rates come from the bank's daily file (imported at 06:00 UTC by
${BT}jobs/import_fx.py${BT}). A payment is converted at the rate of the day it was
received; weekends and bank holidays use the previous business day.
"""

from __future__ import annotations

import functools
from datetime import date, datetime, timedelta
from decimal import Decimal

from sqlalchemy import select

from ledgerline.currency import get_currency
from ledgerline.db import models as m
from ledgerline.db.session import session_scope
from ledgerline.money import Money

MAX_LOOKBACK_DAYS = 7


class MissingRate(LookupError):
    pass


@functools.lru_cache(maxsize=4096)
def _rate(base: str, quote: str, day: date) -> Decimal:
    with session_scope(readonly=True) as s:
        for back in range(MAX_LOOKBACK_DAYS + 1):
            d = day - timedelta(days=back)
            row = s.scalar(select(m.FxRate.rate).where(m.FxRate.base == base, m.FxRate.quote == quote, m.FxRate.day == d))
            if row is not None:
                return row
    raise MissingRate(f"no {base}/{quote} rate within {MAX_LOOKBACK_DAYS} days of {day}")


def rate_on(base: str, quote: str, when: datetime | date) -> Decimal:
    if base == quote:
        return Decimal(1)
    day = when.date() if isinstance(when, datetime) else when
    return _rate(base, quote, day)


def convert(amount: Money, to: str, when: datetime | date) -> Money:
    rate = rate_on(amount.currency.code, to, when)
    return Money(amount.amount * rate, get_currency(to)).round()
`;

const HELPERS_PY = String.raw`"""Test helpers shared by the billing and integration tests."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal

from pypdf import PdfReader

from ledgerline.billing.model import Customer, Invoice, InvoiceLine, Issuer
from ledgerline.billing.tax import TaxRate
from ledgerline.money import Money

AMOUNT = re.compile(r"-?[\d,]+\.\d{2}")

ISSUER = Issuer("Ledgerline Test Ltd", ("1 Test Street", "London"), "Pay by bank transfer to GB00 TEST 0000 0000 0000 00.")
CUSTOMER = Customer("C-10001", "Acme Widgets GmbH", ("Hauptstr. 5", "10115 Berlin"), "Germany", "DE123456789")
RATES = {"standard": TaxRate("standard", Decimal("0.20")), "reduced": TaxRate("reduced", Decimal("0.05"))}


def make_invoice(nets: list[str], number: str = "INV-TEST-1", currency: str = "EUR") -> Invoice:
    lines = tuple(
        InvoiceLine(f"SKU-{i}", f"Item {i}", Decimal(1), Money.of(n, currency), Money.of(n, currency), "standard",
                    Money.zero(currency))
        for i, n in enumerate(nets)
    )
    return Invoice(number, ISSUER, CUSTOMER, lines, date(2024, 5, 1), date(2024, 5, 31), RATES)


def parse_amount(text: str) -> Decimal:
    m = AMOUNT.search(text.replace("\u2212", "-"))
    if not m:
        raise ValueError(f"no amount in {text!r}")
    return Decimal(m.group(0).replace(",", ""))


@dataclass
class PdfTable:
    text: str
    header: list[str] = field(default_factory=list)
    lines: list[dict[str, str]] = field(default_factory=list)
    totals: dict[str, Decimal] = field(default_factory=dict)


def extract_pdf_table(data: bytes) -> PdfTable:
    """Reads back the line table and the totals block of a rendered invoice."""
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    out = PdfTable(text)
    rows = [r for r in text.splitlines() if r.strip()]
    try:
        start = next(i for i, r in enumerate(rows) if r.startswith("Item"))
    except StopIteration:
        return out
    out.header = rows[start].split("  ")
    for r in rows[start + 1:]:
        if r.startswith(("Subtotal", "Discount", "Net", "Tax", "Total due")):
            label, _, amount = r.rpartition(" ")
            out.totals[label.strip()] = parse_amount(amount)
        elif AMOUNT.search(r) and not out.totals:
            cells = [c for c in re.split(r"\s{2,}", r) if c]
            out.lines.append(dict(zip(out.header, cells)))
    return out
`;

const ROUTES_EXCERPT = String.raw`@router.post("/v2/invoices", status_code=201, response_model=InvoiceOut)
def create_invoice(
    body: InvoiceCreate,
    session: Session = Depends(get_session),
    idempotency_key: str | None = Header(default=None, alias="Idempotency-Key"),
    principal: Principal = Depends(require_scope("invoices:write")),
) -> InvoiceOut:
    if idempotency_key:
        replay = idempotency.lookup(session, principal.account_id, idempotency_key)
        if replay is not None:
            return replay
    draft, discount = draft_from_request(body)
    totals = compute_invoice_totals(list(draft.lines), discount, draft.tax_rates)
    invoice = m.Invoice(
        account_id=principal.account_id,
        customer_id=customers.resolve(session, principal.account_id, body.customer_ref).id,
        number=numbering.next_number(session, principal.account_id, draft.issued_on.year),
        currency=body.currency,
        issued_on=draft.issued_on,
        due_on=draft.due_on,
        subtotal=totals.subtotal.amount,
        discount_total=totals.discount.amount,
        discount_kind=discount.kind.value if discount else None,
        tax_total=totals.tax.amount,
        total_due=totals.total.amount,
        line_count=len(totals.lines),
    )
    for pos, line in enumerate(totals.lines):
        invoice.lines.append(m.InvoiceLine(
            position=pos, sku=line.sku, description=line.description, quantity=line.quantity,
            unit_price=line.unit_price.amount, net=line.net.amount, tax_code=line.tax_code,
            discount_amount=line.discount_amount.amount, is_credit=line.is_credit,
        ))
    session.add(invoice)
    session.flush()
    out = InvoiceOut.from_model(invoice)
    if idempotency_key:
        idempotency.store(session, principal.account_id, idempotency_key, out)
    audit.record(session, principal, "invoice.created", invoice.id)
    return out


@router.post("/v2/invoices/preview", response_model=InvoicePreview)
def preview_invoice(body: InvoiceCreate, principal: Principal = Depends(require_scope("invoices:read"))) -> InvoicePreview:
    """Totals of a draft without saving it (used by the checkout page)."""
    draft, discount = draft_from_request(body)
    preview_lines = apply_discount(draft.lines, discount)
    totals = compute_invoice_totals(list(draft.lines), discount, draft.tax_rates)
    return InvoicePreview(
        lines=[LineOut.from_line(l) for l in preview_lines],
        totals=TotalsOut.from_totals(totals),
    )


def draft_from_request(body: InvoiceCreate) -> tuple[Invoice, Discount | None]:
    rates = tax_rates_for(body.currency, body.issued_on)
    lines = []
    for item in body.lines:
        unit = Money.of(item.unit_price, body.currency)
        net = (unit * item.quantity).round()
        lines.append(InvoiceLine(
            sku=item.sku, description=item.description, quantity=item.quantity, unit_price=unit,
            net=-net if item.is_credit else net, tax_code=item.tax_code,
            discount_amount=Money.zero(body.currency), is_credit=item.is_credit,
        ))
    discount = None
    if body.discount is not None:
        discount = Discount(
            kind=DiscountKind(body.discount.kind),
            value=Decimal(body.discount.value),
            code=body.discount.code,
            applies_to=frozenset(body.discount.applies_to) if body.discount.applies_to else None,
        )
    draft = Invoice(
        number="DRAFT", issuer=ISSUER_PLACEHOLDER, customer=CUSTOMER_PLACEHOLDER, lines=tuple(lines),
        issued_on=body.issued_on, due_on=body.due_on, tax_rates=rates,
    )
    return draft, discount
`;

function gitLog(entries) {
  return entries
    .map(([msg, author, days]) => {
      const d = new Date(Date.parse('2024-05-14T10:00:00Z') - days * 86400000 - int(0, 80000) * 1000);
      return `commit ${token(40, HEX)}\nAuthor: ${author}\nDate:   ${d.toUTCString().replace('GMT', '+0000')}\n\n    ${msg}\n`;
    })
    .join('\n');
}

function hypothesisStats() {
  const rows = ['test_line_discounts_sum_to_footer', 'test_discount_never_exceeds_eligible_net', 'test_credit_lines_untouched'].map((t, i) => {
    const n = i === 0 ? 400 : 100;
    return `tests/billing/test_discount_properties.py::${t}:

  - during reuse phase (0.00 seconds):
    - Typical runtimes: ~ 1ms, of which < 1ms in data generation
    - ${int(1, 3)} passing examples, 0 failing examples, 0 invalid examples

  - during generate phase (${(int(80, 400) / 100).toFixed(2)} seconds):
    - Typical runtimes: ~ ${int(1, 4)}-${int(5, 12)} ms, of which ~ ${int(1, 3)}-${int(4, 8)} ms in data generation
    - ${n - int(1, 3)} passing examples, 0 failing examples, ${int(0, 30)} invalid examples
    - Events:
      * ${int(20, 45)}.${int(0, 9)}%, applies_to=None
      * ${int(10, 30)}.${int(0, 9)}%, has credit line
      * ${int(3, 12)}.${int(0, 9)}%, all eligible lines zero

  - Stopped because settings.max_examples=${n}
`;
  });
  return `${rows.join('\n')}\n3 passed in ${(int(500, 900) / 100).toFixed(2)}s`;
}

// ---------------------------------------------------------------------------------------------
// Generated tool outputs.

const CUSTOMERS = ['C-40912', 'C-11873', 'C-73320', 'C-20458', 'C-99104', 'C-31337', 'C-56021', 'C-88412', 'C-12006', 'C-67450'];
const CURRENCIES = ['EUR', 'EUR', 'EUR', 'GBP', 'USD'];

function tree() {
  return `ledgerline/
├── ledgerline/
│   ├── __init__.py
│   ├── api/
│   │   ├── __init__.py
│   │   ├── app.py
│   │   ├── deps.py
│   │   └── routes/  (customers.py, invoices.py, payments.py, webhooks.py)
│   ├── billing/
│   │   ├── __init__.py
│   │   ├── discounts.py
│   │   ├── invoice_pdf.py
│   │   ├── model.py
│   │   ├── numbering.py
│   │   ├── tax.py
│   │   └── totals.py
│   ├── currency.py
│   ├── db/  (models.py, session.py, migrations/ 44 files)
│   ├── fx.py
│   ├── i18n.py
│   ├── money.py
│   ├── notify.py
│   └── reconcile/
│       ├── __init__.py
│       ├── nightly.py
│       └── report.py
├── tests/
│   ├── billing/  (test_discounts.py, test_invoice_pdf.py, test_tax.py, test_totals.py)
│   ├── integration/  (conftest.py, test_api_invoices.py, test_pdf_snapshots.py, fixtures/ 12 files)
│   ├── reconcile/  (test_nightly.py)
│   └── test_money.py
├── scripts/  (regen_fixtures.py, seed_dev_db.py)
├── docs/  (billing/discounts.md, billing/tax.md, operations.md)
├── CHANGELOG.md
├── pyproject.toml
└── README.md

14 directories, 61 files`;
}

function grep(pattern, hits) {
  return hits.map(([file, line, text]) => `${file}:${line}:${text}`).join('\n');
}

/** A pytest -q run of a few files, all passing. */
function pytestQuick(files, dots, secs) {
  const lines = files.map((f, i) => `${f} ${'.'.repeat(dots[i])}`.padEnd(72) + `[${pad(Math.round((100 * dots.slice(0, i + 1).reduce((a, b) => a + b, 0)) / dots.reduce((a, b) => a + b, 0)), 3, ' ')}%]`);
  const n = dots.reduce((a, b) => a + b, 0);
  return `${lines.join('\n')}\n\n${n} passed in ${secs}s`;
}

function reproOutput() {
  const rows = [];
  let mismatches = 0;
  for (let i = 0; i < 24; i++) {
    const nlines = int(2, 6);
    const pct = pick(['5', '7.5', '10', '12.5', '15', '20', '33']);
    const nets = Array.from({ length: nlines }, () => money(3, 400));
    const sub = nets.reduce((a, b) => a + Math.round(Number(b) * 100), 0);
    const footer = Math.round((sub * Number(pct)) / 100);
    const perLine = nets.reduce((a, b) => a + Math.round((Math.round(Number(b) * 100) * Number(pct)) / 100), 0);
    const diff = perLine - footer;
    if (diff !== 0) mismatches++;
    rows.push(
      `${pad(i + 1, 3, ' ')}  ${pad(nlines, 5, ' ')}  ${pct.padStart(5)}%  ${(sub / 100).toFixed(2).padStart(10)}  ${(footer / 100).toFixed(2).padStart(9)}  ${(perLine / 100).toFixed(2).padStart(9)}  ${diff === 0 ? '   ok' : (diff > 0 ? '+' : '') + (diff / 100).toFixed(2)}`,
    );
  }
  return `  #  lines    pct    subtotal   footer  sum(lines)  diff
${rows.join('\n')}

${mismatches} of 24 random invoices: sum of line discounts != footer discount`;
}

function pytestFailureAfterFirstFix() {
  return `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0
rootdir: /workspace/ledgerline
configfile: pyproject.toml
plugins: hypothesis-6.100.2, cov-5.0.0, xdist-3.6.1
collected 58 items

tests/billing/test_discounts.py ..................                       [ 31%]
tests/billing/test_invoice_pdf.py ...F....                               [ 44%]
tests/billing/test_tax.py ..........                                     [ 62%]
tests/billing/test_totals.py ............                                [ 82%]
tests/test_money.py ..........                                           [100%]

=================================== FAILURES ===================================
___________________ test_line_discount_column_matches_footer ___________________

sample_invoice = Invoice(number='INV-2024-000417', lines=(...3 lines...), customer=Customer(ref='C-10001', ...))
pct_10 = Discount(kind=<DiscountKind.PERCENTAGE: 'percentage'>, value=Decimal('10'), code='TEST10', applies_to=None)

    def test_line_discount_column_matches_footer(sample_invoice, pct_10):
        rows = extract_pdf_table(render_invoice(sample_invoice, pct_10))
        line_discounts = [parse_amount(r["Discount"]) for r in rows.lines]
>       assert line_discounts == [Decimal("-1.00"), Decimal("-3.34"), Decimal("-0.51")]
E       AssertionError: assert [Decimal('-1.00'), Decimal('-3.34'), Decimal('-0.50')] == [Decimal('-1.00'), Decimal('-3.34'), Decimal('-0.51')]
E
E         At index 2 diff: Decimal('-0.50') != Decimal('-0.51')
E         Full diff:
E           [
E               Decimal('-1.00'),
E               Decimal('-3.34'),
E         -     Decimal('-0.51'),
E         ?                  ^
E         +     Decimal('-0.50'),
E         ?                  ^
E           ]

tests/billing/test_invoice_pdf.py:88: AssertionError
=========================== short test summary info ============================
FAILED tests/billing/test_invoice_pdf.py::test_line_discount_column_matches_footer - AssertionError: assert [Decimal('-1.00'), Decimal('-3.34'), Decimal('-0.50')] == [Decimal('-1.00'), Decimal('-3.34'), Decimal('-0.51')]
========================= 1 failed, 57 passed in 3.41s =========================`;
}

function testInvoicePdfPy() {
  const fixtures = String.raw`import re
from decimal import Decimal

import pytest
from pypdf import PdfReader

from ledgerline.billing.discounts import Discount, DiscountKind
from ledgerline.billing.invoice_pdf import RenderOptions, render_invoice
from tests.helpers import extract_pdf_table, make_invoice, parse_amount


@pytest.fixture
def sample_invoice():
    # 10.00 + 33.35 + 5.05 = 48.40; 10% of that is 4.84
    return make_invoice(nets=["10.00", "33.35", "5.05"], number="INV-2024-000417")


@pytest.fixture
def pct_10():
    return Discount(DiscountKind.PERCENTAGE, Decimal("10"), code="TEST10")


def test_renders_a_pdf(sample_invoice):
    data = render_invoice(sample_invoice)
    assert data.startswith(b"%PDF-")
    assert len(PdfReader(__import__("io").BytesIO(data)).pages) == 1


def test_title_and_number(sample_invoice):
    text = extract_pdf_table(render_invoice(sample_invoice)).text
    assert "Invoice INV-2024-000417" in text


def test_totals_block_without_discount(sample_invoice):
    rows = extract_pdf_table(render_invoice(sample_invoice))
    assert rows.totals["Subtotal"] == Decimal("48.40")
    assert "Discount" not in rows.totals


def test_footer_discount(sample_invoice, pct_10):
    rows = extract_pdf_table(render_invoice(sample_invoice, pct_10))
    assert rows.totals["Discount"] == Decimal("-4.84")
    assert rows.totals["Net"] == Decimal("43.56")


def test_line_discount_column_matches_footer(sample_invoice, pct_10):
    rows = extract_pdf_table(render_invoice(sample_invoice, pct_10))
    line_discounts = [parse_amount(r["Discount"]) for r in rows.lines]
    assert line_discounts == [Decimal("-1.00"), Decimal("-3.34"), Decimal("-0.51")]


def test_hide_line_discounts(sample_invoice, pct_10):
    rows = extract_pdf_table(render_invoice(sample_invoice, pct_10, RenderOptions(show_line_discounts=False)))
    assert "Discount" not in rows.header


def test_promotion_code_is_printed(sample_invoice, pct_10):
    text = extract_pdf_table(render_invoice(sample_invoice, pct_10)).text
    assert re.search(r"Promotion code TEST10 applied", text)


def test_credit_note_amount(sample_invoice):
    from ledgerline.billing.invoice_pdf import render_credit_note
    text = extract_pdf_table(render_credit_note(sample_invoice, "duplicate")).text
    assert "Amount credited" in text
`;
  return fixtures;
}

/** The CI job log: dependency install, database setup, ~300 integration tests, two failures. */
function ciLog() {
  const c = clock('2024-05-14T09:12:03.441Z');
  const ts = (a = 1, b = 60) => c.tick(a, b).replace('Z', '0000Z');
  const out = [];
  const L = (s) => out.push(`${ts()} ${s}`);
  L('##[group]Run actions/checkout@v4');
  L('with:');
  L('  repository: ledgerline/ledgerline');
  L('  ref: refs/pull/1184/merge');
  L('  fetch-depth: 1');
  L('##[endgroup]');
  L('Syncing repository: ledgerline/ledgerline');
  L(`HEAD is now at ${token(7, HEX)} Merge ${token(40, HEX)} into ${token(40, HEX)}`);
  L('##[group]Run actions/setup-python@v5');
  L('Successfully set up CPython (3.12.3)');
  L('##[endgroup]');
  L('##[group]Run pip install -r requirements/ci.txt');
  const pkgs = [
    ['fastapi', '0.110.2'], ['starlette', '0.37.2'], ['pydantic', '2.7.1'], ['pydantic-core', '2.18.2'],
    ['uvicorn', '0.29.0'], ['sqlalchemy', '2.0.30'], ['alembic', '1.13.1'], ['psycopg', '3.1.19'],
    ['psycopg-binary', '3.1.19'], ['redis', '5.0.4'], ['reportlab', '4.2.0'], ['pypdf', '4.2.0'],
    ['babel', '2.15.0'], ['httpx', '0.27.0'], ['anyio', '4.3.0'], ['sniffio', '1.3.1'], ['idna', '3.7'],
    ['certifi', '2024.2.2'], ['h11', '0.14.0'], ['httpcore', '1.0.5'], ['typing-extensions', '4.11.0'],
    ['annotated-types', '0.6.0'], ['greenlet', '3.0.3'], ['mako', '1.3.3'], ['markupsafe', '2.1.5'],
    ['pillow', '10.3.0'], ['chardet', '5.2.0'], ['structlog', '24.1.0'], ['tenacity', '8.3.0'],
    ['python-dateutil', '2.9.0.post0'], ['six', '1.16.0'], ['pytz', '2024.1'], ['pytest', '8.2.0'],
    ['pluggy', '1.5.0'], ['iniconfig', '2.0.0'], ['packaging', '24.0'], ['pytest-cov', '5.0.0'],
    ['coverage', '7.5.1'], ['pytest-xdist', '3.6.1'], ['execnet', '2.1.1'], ['hypothesis', '6.100.2'],
    ['attrs', '23.2.0'], ['sortedcontainers', '2.4.0'], ['freezegun', '1.5.0'], ['respx', '0.21.1'],
    ['factory-boy', '3.3.0'], ['faker', '25.0.1'], ['testcontainers', '4.4.1'], ['docker', '7.0.0'],
    ['requests', '2.31.0'], ['urllib3', '2.2.1'], ['charset-normalizer', '3.3.2'], ['wrapt', '1.16.0'],
    ['mypy', '1.10.0'], ['mypy-extensions', '1.0.0'], ['ruff', '0.4.4'], ['types-python-dateutil', '2.9.0.20240316'],
  ];
  for (const [name, v] of pkgs) {
    const file = name.replaceAll('-', '_');
    const native = ['pydantic-core', 'psycopg-binary', 'greenlet', 'pillow', 'coverage', 'markupsafe', 'wrapt', 'mypy', 'ruff', 'charset-normalizer'].includes(name);
    const whl = native ? `${file}-${v}-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl` : `${file}-${v}-py3-none-any.whl`;
    L(`Collecting ${name}==${v} (from -r requirements/${pick(['base', 'base', 'test'])}.txt (line ${int(2, 40)}))`);
    L(`  Downloading ${whl}.metadata (${int(2, 60)} kB)`);
    const size = native ? `${(int(10, 120) / 10).toFixed(1)} MB` : `${int(20, 600)} kB`;
    L(`Downloading ${whl} (${size})`);
    L(`   ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ ${size} ${(int(50, 900) / 10).toFixed(1)} MB/s eta 0:00:00`);
  }
  L('Installing collected packages: ' + pkgs.map(([n]) => n).join(', '));
  L('Successfully installed ' + pkgs.map(([n, v]) => `${n}-${v}`).join(' '));
  L('##[endgroup]');
  L('##[group]Run docker compose -f ci/compose.yml up -d --wait postgres redis');
  L(' Network ci_default  Creating');
  L(' Network ci_default  Created');
  L(' Container ci-postgres-1  Creating');
  L(' Container ci-redis-1  Creating');
  L(' Container ci-redis-1  Started');
  L(' Container ci-postgres-1  Started');
  L(' Container ci-postgres-1  Waiting');
  L(' Container ci-postgres-1  Healthy');
  L('##[endgroup]');
  L('##[group]Run alembic upgrade head');
  const migs = ['create customers', 'create invoices', 'invoice lines', 'payments', 'payment allocations', 'tax rates',
    'invoice numbering sequences', 'customer vat number', 'fx rates', 'reconcile mismatch table', 'invoice due date',
    'credit notes', 'line tax code', 'discount columns', 'promotion codes', 'invoice discount cents'];
  let prev = null;
  for (let i = 0; i < migs.length; i++) {
    const rev = pad(27 + i, 4);
    L(`INFO  [alembic.runtime.migration] Running upgrade ${prev ?? ''} -> ${rev}, ${migs[i]}`);
    prev = rev;
  }
  L('##[endgroup]');
  L('##[group]Run pytest tests/integration -v -p no:cacheprovider -n 2 --durations=15');
  L('============================= test session starts ==============================');
  L('platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0 -- /opt/hostedtoolcache/Python/3.12.3/x64/bin/python');
  L('rootdir: /home/runner/work/ledgerline/ledgerline');
  L('configfile: pyproject.toml');
  L('plugins: hypothesis-6.100.2, cov-5.0.0, xdist-3.6.1, respx-0.21.1, Faker-25.0.1');
  L('created: 2/2 workers');
  L('2 workers [317 items]');
  L('');
  const suites = [
    ['tests/integration/test_api_invoices.py', ['test_create_invoice', 'test_get_invoice', 'test_list_invoices_paginated', 'test_invoice_totals_in_response', 'test_discount_applied', 'test_void_invoice', 'test_issue_credit_note', 'test_idempotency_key_replay', 'test_invoice_number_sequence', 'test_currency_mismatch_rejected']],
    ['tests/integration/test_api_payments.py', ['test_record_payment', 'test_partial_payment', 'test_overpayment_creates_credit', 'test_allocate_payment', 'test_refund', 'test_webhook_signature']],
    ['tests/integration/test_pdf_snapshots.py', ['test_pdf_matches_api_totals', 'test_pdf_snapshot', 'test_pdf_locale']],
    ['tests/integration/test_reconcile_job.py', ['test_clean_run', 'test_detects_underpayment', 'test_fx_tolerance', 'test_alert_threshold']],
  ];
  const params = ['eur-single-line', 'eur-multi-line', 'gbp-multi-line', 'usd-tax-exempt', 'discounted-single-line', 'discounted-multi-line', 'fixed-discount', 'credit-line', 'jpy-no-decimals', 'reduced-rate', 'mixed-rates', 'applies-to-sku'];
  const items = [];
  for (const [file, fns] of suites) {
    for (const fn of fns) {
      const ps = chance(0.75) ? params.slice(0, int(6, params.length)) : [null];
      for (const p of ps) items.push(`${file}::${fn}${p ? `[${p}]` : ''}`);
    }
  }
  while (items.length > 317) items.splice(int(0, items.length - 1), 1);
  const failing = new Set(['tests/integration/test_pdf_snapshots.py::test_pdf_matches_api_totals[discounted-multi-line]', 'tests/integration/test_api_invoices.py::test_discount_applied[discounted-multi-line]']);
  for (const f of failing) if (!items.includes(f)) items.push(f);
  items.forEach((it, i) => {
    const pct = Math.floor(((i + 1) * 100) / items.length);
    const status = failing.has(it) ? 'FAILED' : chance(0.012) ? 'SKIPPED (needs LEDGERLINE_S3_BUCKET)' : 'PASSED';
    L(`[gw${int(0, 1)}] [${pad(pct, 3, ' ')}%] ${status} ${it}`);
  });
  L('');
  L('=================================== FAILURES ===================================');
  L('______________ test_pdf_matches_api_totals[discounted-multi-line] _______________');
  L('[gw1] linux -- Python 3.12.3 /opt/hostedtoolcache/Python/3.12.3/x64/bin/python');
  L('');
  const tb1 = String.raw`case = 'discounted-multi-line', api_client = <httpx.Client object at 0x7f3b1c2d9e50>
fixtures_dir = PosixPath('/home/runner/work/ledgerline/ledgerline/tests/integration/fixtures')

    @pytest.mark.parametrize("case", CASES)
    def test_pdf_matches_api_totals(case, api_client, fixtures_dir):
        fixture = json.loads((fixtures_dir / "invoices_discounted.json").read_text())[case]
        created = api_client.post("/v2/invoices", json=fixture["request"]).raise_for_status().json()
        pdf = api_client.get(f"/v2/invoices/{created['id']}/pdf").raise_for_status().content
        table = extract_pdf_table(pdf)
        assert table.totals["Discount"] == -Decimal(created["totals"]["discount"])
>       assert [parse_amount(r["Discount"]) for r in table.lines] == [-Decimal(x) for x in fixture["expected"]["line_discounts"]]
E       AssertionError: assert [Decimal('-12.47'), Decimal('-3.12'), Decimal('-0.84'), Decimal('-31.19')] == [Decimal('-12.47'), Decimal('-3.12'), Decimal('-0.85'), Decimal('-31.19')]
E
E         At index 2 diff: Decimal('-0.84') != Decimal('-0.85')
E         Use -v to get more diff

tests/integration/test_pdf_snapshots.py:61: AssertionError`;
  for (const l of tb1.split('\n')) L(l);
  L('----------------------------- Captured log call ------------------------------');
  L(`INFO     httpx:_client.py:1026 HTTP Request: POST http://testserver/v2/invoices "HTTP/1.1 201 Created"`);
  L(`INFO     httpx:_client.py:1026 HTTP Request: GET http://testserver/v2/invoices/${int(1000, 9999)}/pdf "HTTP/1.1 200 OK"`);
  L('___________ test_discount_applied[discounted-multi-line] ____________');
  L('[gw0] linux -- Python 3.12.3 /opt/hostedtoolcache/Python/3.12.3/x64/bin/python');
  const tb2 = String.raw`case = 'discounted-multi-line', api_client = <httpx.Client object at 0x7f3b1c1a4410>

    @pytest.mark.parametrize("case", CASES)
    def test_discount_applied(case, api_client):
        fixture = load_fixture("invoices_discounted.json")[case]
        body = api_client.post("/v2/invoices", json=fixture["request"]).raise_for_status().json()
        assert body["totals"]["discount"] == fixture["expected"]["discount"]
>       assert [l["discount_amount"] for l in body["lines"]] == fixture["expected"]["line_discounts"]
E       AssertionError: assert ['12.47', '3.12', '0.84', '31.19'] == ['12.47', '3.12', '0.85', '31.19']
E
E         At index 2 diff: '0.84' != '0.85'
E         Use -v to get more diff

tests/integration/test_api_invoices.py:142: AssertionError`;
  for (const l of tb2.split('\n')) L(l);
  L('============================= slowest 15 durations =============================');
  const slow = items.filter(() => chance(0.2)).slice(0, 15);
  for (const s of slow) L(`${(int(120, 4800) / 100).toFixed(2)}s call     ${s}`);
  L('=========================== short test summary info ============================');
  for (const f of failing) L(`FAILED ${f} - AssertionError: assert [...] == [...]`);
  L(`============ 2 failed, ${items.length - 2 - 4} passed, 4 skipped in 187.42s (0:03:07) =============`);
  L('##[error]Process completed with exit code 1.');
  L('##[group]Run docker compose -f ci/compose.yml logs --no-color postgres');
  for (let i = 0; i < 90; i++) {
    const pid = int(60, 400);
    const what = pick([
      `LOG:  checkpoint starting: time`,
      `LOG:  checkpoint complete: wrote ${int(3, 900)} buffers (${(int(1, 90) / 10).toFixed(1)}%); 0 WAL file(s) added, 0 removed, ${int(0, 2)} recycled; write=${(int(1, 300) / 100).toFixed(3)} s, sync=0.00${int(1, 9)} s, total=${(int(1, 300) / 100).toFixed(3)} s`,
      `LOG:  duration: ${(int(100, 90000) / 100).toFixed(3)} ms  statement: SELECT invoices.id, invoices.number, invoices.total_due FROM invoices WHERE invoices.customer_id = ${int(1, 500)} ORDER BY invoices.id LIMIT 50`,
      `ERROR:  duplicate key value violates unique constraint "uq_idempotency_key"`,
      `LOG:  connection received: host=172.18.0.1 port=${int(30000, 60000)}`,
      `LOG:  connection authorized: user=ledgerline database=ledgerline_test application_name=pytest-gw${int(0, 1)}`,
      `LOG:  disconnection: session time: 0:00:${pad(int(0, 59), 2)}.${pad(int(0, 999), 3)} user=ledgerline database=ledgerline_test host=172.18.0.1 port=${int(30000, 60000)}`,
    ]);
    L(`ci-postgres-1  | ${c.now().slice(0, 23).replace('T', ' ')} UTC [${pid}] ${what}`);
  }
  L('##[endgroup]');
  L('Post job cleanup.');
  L('Cleaning up orphan processes');
  return out.join('\n');
}

function invoicesFixture() {
  const cases = {};
  const names = ['eur-single-line', 'eur-multi-line', 'gbp-multi-line', 'discounted-single-line', 'discounted-multi-line', 'fixed-discount', 'credit-line', 'applies-to-sku', 'reduced-rate', 'mixed-rates'];
  for (const name of names) {
    const currency = name.startsWith('gbp') ? 'GBP' : 'EUR';
    const n = name.includes('multi') || name.includes('mixed') ? int(3, 5) : name.includes('single') ? 1 : int(2, 3);
    const lines = Array.from({ length: n }, (_, i) => ({
      sku: `SKU-${int(100, 999)}`,
      description: pick(['Annual plan seat', 'Onboarding workshop (half day)', 'API overage, 10k calls', 'Premium support', 'Data export add-on', 'Extra storage 100 GB', 'SMS credits pack', 'Priority routing']),
      quantity: String(int(1, 12)),
      unit_price: money(1, 250),
      tax_code: name === 'reduced-rate' || (name === 'mixed-rates' && i % 2) ? 'reduced' : 'standard',
      ...(name === 'credit-line' && i === n - 1 ? { is_credit: true } : {}),
    }));
    const discount = name.includes('discount') || name === 'applies-to-sku'
      ? name === 'fixed-discount' ? { kind: 'fixed', value: '25.00' } : { kind: 'percentage', value: pick(['7.5', '10', '12.5', '15']), code: 'SPRING' + int(10, 30) }
      : null;
    cases[name] = {
      request: { customer_ref: pick(CUSTOMERS), currency, issued_on: '2024-05-0' + int(1, 9), lines, ...(discount ? { discount } : {}) },
      expected: {
        subtotal: money(50, 2000),
        discount: discount ? money(2, 120) : '0.00',
        tax: money(5, 300),
        total: money(50, 2400),
        line_discounts: lines.map(() => (discount ? money(0, 40) : '0.00')),
      },
    };
  }
  cases['discounted-multi-line'].expected.line_discounts = ['12.47', '3.12', '0.85', '31.19'];
  cases['discounted-multi-line'].expected.discount = '47.62';
  return JSON.stringify(cases, null, 2);
}

/** Last night's reconciliation log: batches, warnings, a few FX ones, a stack trace from a retry. */
function reconcileLog() {
  const c = clock('2024-05-14T02:00:00.000Z');
  const out = [];
  const L = (lvl, logger, msg) => out.push(`${c.tick(5, 900)} ${lvl.padEnd(5)} ${logger.padEnd(20)} ${msg}`);
  L('INFO', 'scheduler', 'starting job reconcile.nightly (trigger=cron "0 2 * * *", attempt=1)');
  L('INFO', 'reconcile.nightly', 'run_id=rc-20240514 lookback=35d since=2024-04-09T02:00:00+00:00 batch_size=500');
  L('INFO', 'db.session', 'pool size=5 overflow=10 dsn=postgresql://ledgerline@db-replica-2:5432/ledgerline');
  let mism = 0;
  const batches = 14;
  for (let b = 1; b <= batches; b++) {
    const inBatch = b === batches ? int(120, 300) : 500;
    let here = 0;
    const nWarn = int(1, 5);
    for (let k = 0; k < 22; k++) {
      L('DEBUG', 'reconcile.nightly', `checked invoice=INV-2024-${pad(int(100000, 130000), 6)} allocations=${int(1, 3)} expected=${money(10, 3000)} ok`);
    }
    for (let w = 0; w < nWarn; w++) {
      const exp = money(20, 4000);
      const fx = chance(0.12);
      const currency = fx ? pick(['GBP', 'USD']) : pick(CURRENCIES);
      const delta = fx ? pick(['0.02', '-0.01', '0.03', '-0.02']) : pick(['0.01', '-0.01', '0.01']);
      const rec = (Number(exp) + Number(delta)).toFixed(2);
      const reason = fx ? (Math.abs(Number(delta)) <= 0.02 ? 'fx_rounding' : 'amount_mismatch') : Number(delta) < 0 ? 'underpaid' : 'amount_mismatch';
      L('WARN', 'reconcile.nightly', `invoice=INV-2024-${pad(int(100000, 130000), 6)} customer=${pick(CUSTOMERS)} expected=${exp} received=${rec} delta=${delta} currency=${currency} reason=${reason}${chance(0.85) && !fx ? ' discount=percentage' : ''}`);
      here++;
    }
    mism += here;
    if (b === 6) {
      L('ERROR', 'db.session', 'OperationalError during batch fetch, retrying in 2.0s (attempt 1/3)');
      const tb = String.raw`Traceback (most recent call last):
  File "/app/ledgerline/reconcile/nightly.py", line 58, in _batches
    rows = session.scalars(
           ^^^^^^^^^^^^^^^^
  File "/app/.venv/lib/python3.12/site-packages/sqlalchemy/orm/session.py", line 2397, in scalars
    return self._execute_internal(
           ^^^^^^^^^^^^^^^^^^^^^^^
  File "/app/.venv/lib/python3.12/site-packages/sqlalchemy/orm/session.py", line 2191, in _execute_internal
    result: Result[Any] = compile_state_cls.orm_execute_statement(
                          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/app/.venv/lib/python3.12/site-packages/sqlalchemy/engine/base.py", line 1418, in execute
    return meth(
           ^^^^^
  File "/app/.venv/lib/python3.12/site-packages/sqlalchemy/engine/base.py", line 1967, in _exec_single_context
    self._handle_dbapi_exception(
  File "/app/.venv/lib/python3.12/site-packages/psycopg/cursor.py", line 732, in execute
    raise ex.with_traceback(None)
sqlalchemy.exc.OperationalError: (psycopg.OperationalError) consuming input failed: server closed the connection unexpectedly
	This probably means the server terminated abnormally
	before or while processing the request.
[SQL: SELECT invoices.id, invoices.number, invoices.customer_id, invoices.currency, invoices.total_due, invoices.paid_at
FROM invoices
WHERE invoices.paid_at >= %(paid_at_1)s::TIMESTAMP WITH TIME ZONE AND invoices.id > %(id_1)s::INTEGER ORDER BY invoices.id
 LIMIT %(param_1)s::INTEGER]
[parameters: {'paid_at_1': datetime.datetime(2024, 4, 9, 2, 0, tzinfo=datetime.timezone.utc), 'id_1': 2500, 'param_1': 500}]
(Background on this error at: https://sqlalche.me/e/20/e3q8)`;
      for (const l of tb.split('\n')) out.push(l);
      L('INFO', 'db.session', 'reconnected to db-replica-2 after 2.0s');
    }
    L('INFO', 'reconcile.nightly', `run_id=rc-20240514 batch=${b} invoices=${inBatch} mismatches=${here}`);
  }
  L('INFO', 'reconcile.nightly', `run_id=rc-20240514 done invoices_checked=? mismatches=${mism} took=${(int(3000, 9000) / 10).toFixed(1)}s`);
  L('INFO', 'notify', `posted to #finance-alerts: "Reconciliation rc-20240514: ${mism - 4} mismatches need review"`);
  L('INFO', 'scheduler', 'job reconcile.nightly finished (exit=0)');
  return out.join('\n');
}

function fullSuiteVerbose() {
  const files = [
    ['tests/billing/test_discounts.py', ['test_percentage_rounds_half_up', 'test_percentage_of_zero_line', 'test_fixed_split_sums_exactly', 'test_fixed_capped', 'test_applies_to', 'test_credit_lines_skipped', 'test_invalid_percentage', 'test_negative_value_rejected']],
    ['tests/billing/test_discount_properties.py', ['test_line_discounts_sum_to_footer', 'test_discount_never_exceeds_eligible_net', 'test_allocation_is_order_stable', 'test_credit_lines_untouched']],
    ['tests/billing/test_invoice_pdf.py', ['test_renders_a_pdf', 'test_title_and_number', 'test_totals_block_without_discount', 'test_footer_discount', 'test_line_discount_column_matches_footer', 'test_hide_line_discounts', 'test_promotion_code_is_printed', 'test_credit_note_amount']],
    ['tests/billing/test_tax.py', ['test_standard_rate', 'test_reduced_rate', 'test_exempt', 'test_rounding_per_rate', 'test_reverse_charge', 'test_unknown_tax_code']],
    ['tests/billing/test_totals.py', ['test_single_line_no_discount', 'test_percentage_discount_single_line', 'test_fixed_discount_is_capped_at_eligible_net', 'test_fixed_discount_split_sums_exactly', 'test_discount_only_on_listed_skus', 'test_credit_lines_are_never_discounted', 'test_percentage_discount_table', 'test_reduced_rate_lines', 'test_empty_invoice_is_rejected']],
    ['tests/reconcile/test_nightly.py', ['test_no_mismatch', 'test_underpaid', 'test_fx_rounding_tolerated', 'test_alert_threshold', 'test_batches_resume_after_last_id']],
    ['tests/test_money.py', ['test_of_rounds', 'test_float_rejected', 'test_currency_mismatch', 'test_allocate_sums', 'test_allocate_zero_weights', 'test_allocate_negative', 'test_allocate_largest_remainder', 'test_str_format', 'test_jpy_has_no_minor_units']],
    ['tests/api/test_invoices_routes.py', ['test_create', 'test_get', 'test_list', 'test_void', 'test_validation_errors', 'test_idempotency']],
    ['tests/api/test_payments_routes.py', ['test_record', 'test_allocate', 'test_refund', 'test_webhook']],
  ];
  const params = ['eur', 'gbp', 'usd', 'jpy', 'credit', 'fixed', 'pct-7.5', 'pct-33', 'empty', 'many-lines'];
  const items = [];
  for (const [f, fns] of files) for (const fn of fns) {
    const ps = chance(0.55) ? params.slice(0, int(3, params.length)) : [null];
    for (const p of ps) items.push(`${f}::${fn}${p ? `[${p}]` : ''}`);
  }
  const lines = items.map((it, i) => `${it} PASSED`.padEnd(92) + `[${pad(Math.floor(((i + 1) * 100) / items.length), 3, ' ')}%]`);
  return `============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.2.0, pluggy-1.5.0 -- /workspace/ledgerline/.venv/bin/python
cachedir: .pytest_cache
hypothesis profile 'default' -> database=DirectoryBasedExampleDatabase(PosixPath('/workspace/ledgerline/.hypothesis/examples'))
rootdir: /workspace/ledgerline
configfile: pyproject.toml
plugins: hypothesis-6.100.2, cov-5.0.0, xdist-3.6.1, respx-0.21.1, Faker-25.0.1
collecting ... collected ${items.length} items

${lines.join('\n')}

---------- coverage: platform linux, python 3.12.3-final-0 -----------
Name                                    Stmts   Miss  Cover
-----------------------------------------------------------
ledgerline/billing/discounts.py            52      0   100%
ledgerline/billing/invoice_pdf.py         118      9    92%
ledgerline/billing/tax.py                  61      2    97%
ledgerline/billing/totals.py               31      0   100%
ledgerline/money.py                        84      1    99%
ledgerline/reconcile/nightly.py            88     11    88%
-----------------------------------------------------------
TOTAL                                    1873    167    91%

============================= ${items.length} passed in 41.87s ==============================`;
}

function changelog() {
  const things = [
    'webhook retries now back off exponentially (max 6 attempts)', 'credit notes carry the original invoice number',
    'the PDF footer wraps long payment instructions', 'JPY invoices no longer show decimals', 'GET /v2/invoices accepts ?status=overdue',
    'reverse-charge VAT line on EU B2B invoices', 'the reconciliation job pages finance above 25 mismatches',
    'idempotency keys expire after 24 hours instead of 7 days', 'customer VAT numbers are validated against the checksum',
    'invoice numbering is gap-free per issuer and year', 'payments in a foreign currency are converted at the bank rate of the day',
    'the /v1 API (sunset announced in 2023.09)', 'promotion codes are case-insensitive', 'tax is rounded per rate, not per line',
    'dunning e-mails use the customer locale', 'the nightly job reads from the replica', 'PDF metadata includes the issuer name',
  ];
  let s = CHANGELOG_HEAD;
  const versions = ['2024.05.0', '2024.04.2', '2024.04.1', '2024.04.0', '2024.03.1', '2024.03.0', '2024.02.0', '2024.01.1', '2024.01.0', '2023.12.0', '2023.11.2', '2023.11.1'];
  for (const v of versions) {
    s += `## [${v}] - ${v.slice(0, 4)}-${v.slice(5, 7)}-${pad(int(1, 28), 2)}\n\n`;
    const sections = ['Added', 'Changed', 'Fixed'].filter(() => chance(0.7));
    for (const sec of sections.length ? sections : ['Fixed']) {
      s += `### ${sec}\n\n`;
      for (let k = int(1, 4); k > 0; k--) {
        const t = pick(things);
        s += `- ${t[0].toUpperCase()}${t.slice(1)} (#${int(700, 1180)}).\n`;
      }
      s += '\n';
    }
  }
  return s.trimEnd() + '\n';
}

// ---------------------------------------------------------------------------------------------
// The conversation.

const messages = [];
function callId() {
  return `call_${token(24)}`;
}
function user(text) {
  messages.push({ role: 'user', content: text });
}
function say(text) {
  messages.push({ role: 'assistant', content: text });
}
/** One assistant message with one or more (parallel) tool calls, then their results in order. */
function act(text, calls) {
  const ids = calls.map(() => callId());
  messages.push({
    role: 'assistant',
    content: text,
    tool_calls: calls.map(([name, args], i) => ({ id: ids[i], type: 'function', function: { name, arguments: JSON.stringify(args) } })),
  });
  calls.forEach(([, , result], i) => messages.push({ role: 'tool', tool_call_id: ids[i], content: result }));
}
const read = (path, text, start = 1) => ['read_file', { path, ...(start > 1 ? { start_line: start } : {}) }, fileResult(path, text, start)];
const run = (command, output) => ['run', { command, timeout_s: 600 }, output];

const SYSTEM = `You are a senior software engineer working as an autonomous coding agent inside the user's repository (ledgerline, a Python 3.12 billing service: FastAPI, SQLAlchemy 2, PostgreSQL, ReportLab for PDFs).

How you work:
- Read before you change anything. Prefer small, focused patches that keep the public API stable unless the user asks otherwise.
- Use the tools: list_files, read_file (prints line numbers), grep (ripgrep syntax), run (a shell in the repository root; the virtualenv is active), apply_patch (unified diff), write_file, fetch_ci_log (by job id).
- You may call several tools at once when the calls are independent (for example reading three files).
- After every change, run the relevant tests; before you say you are done, run the whole unit suite.
- Money is exact: amounts are Decimal, never float. Rounding happens in ledgerline.money and nowhere else.
- Never commit, push or touch the production database. The CI and the on-call engineer do that.
- When you report back, say what you found, what you changed (files and why), and what you verified. Be concise; quote only the lines that matter.`;

messages.push({ role: 'system', content: SYSTEM });

// Turn 1: reproduce and find the cause.
user(`Ticket BILL-2291 from support: several customers say the "Discount" in the invoice footer doesn't match the sum of the per-line discounts on the PDF — off by a cent, sometimes two. It only seems to happen with percentage promo codes on invoices with several lines. Can you reproduce it and find the cause? Don't fix anything yet.`);
act('I will start by getting an overview of the repository.', [['list_files', { path: '.', depth: 3 }, tree()]]);
act(null, [
  read('ledgerline/billing/totals.py', TOTALS_PY),
  read('ledgerline/billing/discounts.py', DISCOUNTS_PY),
  read('ledgerline/money.py', MONEY_PY),
]);
act('The footer uses `invoice_discount()` while the line column comes from `apply_discount()`. Let me see where each is used.', [
  ['grep', { pattern: 'invoice_discount|apply_discount', path: '.' }, grep('', [
    ['ledgerline/billing/discounts.py', 17, '__all__ = ["Discount", "DiscountKind", "apply_discount", "invoice_discount"]'],
    ['ledgerline/billing/discounts.py', 47, 'def apply_discount(lines: list[InvoiceLine], discount: Discount | None) -> list[InvoiceLine]:'],
    ['ledgerline/billing/discounts.py', 71, 'def invoice_discount(lines: list[InvoiceLine], discount: Discount | None) -> Money:'],
    ['ledgerline/billing/totals.py', 8, 'from ledgerline.billing.discounts import Discount, apply_discount'],
    ['ledgerline/billing/totals.py', 49, '    discounted = apply_discount(lines, discount)'],
    ['ledgerline/billing/invoice_pdf.py', 22, 'from ledgerline.billing.discounts import Discount, invoice_discount'],
    ['ledgerline/billing/invoice_pdf.py', 130, '    footer_discount = invoice_discount(list(invoice.lines), discount)'],
    ['ledgerline/api/routes/invoices.py', 14, 'from ledgerline.billing.discounts import Discount, DiscountKind, apply_discount'],
    ['ledgerline/api/routes/invoices.py', 203, '    preview_lines = apply_discount(draft.lines, discount)'],
    ['tests/billing/test_discounts.py', 6, 'from ledgerline.billing.discounts import Discount, DiscountKind, apply_discount, invoice_discount'],
  ])],
  ['grep', { pattern: '\\.round\\(', path: 'ledgerline' }, grep('', [
    ['ledgerline/money.py', 38, '        return cls(Decimal(amount), get_currency(code)).round()'],
    ['ledgerline/billing/discounts.py', 57, '            out[i] = replace(line, discount_amount=(line.net * rate).round())'],
    ['ledgerline/billing/discounts.py', 77, '        return (eligible_net * (discount.value / _HUNDRED)).round()'],
    ['ledgerline/billing/totals.py', 58, '        total=(net + tax).round(),'],
    ['ledgerline/billing/tax.py', 41, '        tax += (base * rate.rate).round()'],
    ['ledgerline/fx.py', 66, '    return Money(amount.amount * rate, get_currency(to)).round()'],
  ])],
]);
act('Tax is computed from the discounted lines too, so a wrong line discount would also move the tax. Let me check tax.py and the history of discounts.py.', [
  read('ledgerline/billing/tax.py', TAX_PY),
  run('git log --follow -n 6 -- ledgerline/billing/discounts.py', gitLog([
    ['Promotion codes: applies_to restricts a discount to listed SKUs (#1102)', 'Priya Raman <priya@ledgerline.dev>', 19],
    ['Credit lines are never discounted (#1077)', 'Tomasz Wierzbicki <tomasz@ledgerline.dev>', 41],
    ['Fixed discounts: split with Money.allocate so parts sum exactly (#1031)', 'Jonas Keller <jonas@ledgerline.dev>', 77],
    ['Show per-line discounts on the PDF (#998)', 'Priya Raman <priya@ledgerline.dev>', 103],
    ['Move discount logic out of totals.py (#954)', 'Jonas Keller <jonas@ledgerline.dev>', 139],
    ['Percentage and fixed discounts (#901)', 'Amelia Okafor <amelia@ledgerline.dev>', 201],
  ])),
]);
act('#998 is interesting: per-line discounts became visible on the PDF in February, and #1031 fixed exactly this class of problem for fixed discounts only. Let me look at the description of #1031.', [
  ['run', { command: 'git show --stat --format=%B $(git log --format=%h --grep "#1031" -n 1)', timeout_s: 60 }, `Fixed discounts: split with Money.allocate so parts sum exactly (#1031)

A fixed discount of 10.00 over three equal lines was shown as 3.33 + 3.33 + 3.33
= 9.99 on the PDF. Split it with the largest-remainder method instead.

Percentage discounts are computed per line and are not affected.

 ledgerline/billing/discounts.py | 14 ++++++++------
 ledgerline/money.py             | 31 +++++++++++++++++++++++++++++++
 tests/billing/test_discounts.py |  9 +++++++++
 tests/test_money.py             | 22 ++++++++++++++++++++++
 4 files changed, 68 insertions(+), 8 deletions(-)`],
]);
act('A quick sanity check of the arithmetic with the numbers from one of the support tickets (three lines, 10% off):', [
  run(`python -c "from decimal import Decimal as D, ROUND_HALF_UP as H; nets=[D('10.00'),D('33.35'),D('5.05')]; q=D('0.01'); print('per line:', [ (n*D('0.1')).quantize(q,H) for n in nets ], 'sum', sum((n*D('0.1')).quantize(q,H) for n in nets)); print('footer  :', (sum(nets)*D('0.1')).quantize(q,H))"`, "per line: [Decimal('1.00'), Decimal('3.34'), Decimal('0.51')] sum 4.85\nfooter  : 4.84"),
]);
act(null, [read('ledgerline/currency.py', String.raw`"""ISO 4217 currencies the service accepts, with their minor units."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Currency:
    code: str
    minor_units: int
    symbol: str


_CURRENCIES = {
    "EUR": Currency("EUR", 2, "€"),
    "GBP": Currency("GBP", 2, "£"),
    "USD": Currency("USD", 2, "$"),
    "CHF": Currency("CHF", 2, "CHF"),
    "SEK": Currency("SEK", 2, "kr"),
    "JPY": Currency("JPY", 0, "¥"),
}


class UnknownCurrency(KeyError):
    pass


def get_currency(code: str) -> Currency:
    try:
        return _CURRENCIES[code.upper()]
    except KeyError:
        raise UnknownCurrency(f"unsupported currency {code!r}") from None
`)]);
act('Let me check the current tests pass before reproducing.', [
  run('pytest tests/billing tests/test_money.py -q', pytestQuick(['tests/billing/test_discounts.py', 'tests/billing/test_invoice_pdf.py', 'tests/billing/test_tax.py', 'tests/billing/test_totals.py', 'tests/test_money.py'], [18, 8, 10, 12, 10], '2.97')),
]);
act('I will write a small reproduction that compares the footer discount with the sum of line discounts on random invoices.', [
  ['write_file', { path: 'scripts/repro_bill_2291.py', content: `"""Reproduction for BILL-2291 (not to be committed)."""\nimport random\nfrom decimal import Decimal\n\nfrom ledgerline.billing.discounts import Discount, DiscountKind, apply_discount, invoice_discount\nfrom tests.billing.test_totals import line\n\nrandom.seed(2291)\nprint("  #  lines    pct    subtotal   footer  sum(lines)  diff")\nbad = 0\nfor n in range(1, 25):\n    nets = [f"{random.randint(300, 40000) / 100:.2f}" for _ in range(random.randint(2, 6))]\n    pct = random.choice(["5", "7.5", "10", "12.5", "15", "20", "33"])\n    lines = [line(x, sku=f"S{i}") for i, x in enumerate(nets)]\n    d = Discount(DiscountKind.PERCENTAGE, Decimal(pct))\n    footer = invoice_discount(lines, d).amount\n    per_line = sum(l.discount_amount.amount for l in apply_discount(lines, d))\n    ...\n` }, 'wrote scripts/repro_bill_2291.py (24 lines)'],
]);
act(null, [run('python scripts/repro_bill_2291.py', reproOutput())]);
act('The API has a preview endpoint that also calls `apply_discount`; let me check it uses the same numbers as the saved invoice.', [
  ['grep', { pattern: 'def (create_invoice|preview_invoice|draft_from_request)', path: 'ledgerline/api/routes/invoices.py' }, grep('', [
    ['ledgerline/api/routes/invoices.py', 141, 'def create_invoice('],
    ['ledgerline/api/routes/invoices.py', 198, 'def preview_invoice(body: InvoiceCreate, principal: Principal = Depends(require_scope("invoices:read"))) -> InvoicePreview:'],
    ['ledgerline/api/routes/invoices.py', 209, 'def draft_from_request(body: InvoiceCreate) -> tuple[Invoice, Discount | None]:'],
  ])],
]);
act(null, [read('ledgerline/api/routes/invoices.py', ROUTES_EXCERPT, 140)]);
act('Confirmed. Let me look at how the PDF combines the two numbers.', [read('ledgerline/billing/invoice_pdf.py', PDF_PY)]);
say(`I reproduced BILL-2291 and found the cause.

**Reproduction.** \`scripts/repro_bill_2291.py\` (a throwaway script, not for commit) builds random multi-line invoices with a percentage discount and compares the footer discount with the sum of the line discounts: they differ by ±0.01 on a large share of them, and never on single-line invoices.

**Cause.** Two different computations of the same discount:

- \`apply_discount()\` (discounts.py:55-57) rounds **each line's** discount separately: \`(line.net * rate).round()\`. These are the values in the PDF's *Discount* column and in the API's \`lines[].discount_amount\`, and \`compute_invoice_totals()\` sums them for \`totals.discount\`, \`net\`, tax and total.
- \`invoice_discount()\` (discounts.py:77) rounds **once** on the eligible subtotal. The PDF prints this in the footer (invoice_pdf.py:130, 94).

Sum-of-rounded ≠ rounded-sum, so with n lines the two can differ by up to n/2 cents. Fixed discounts don't have the problem: they already go through \`Money.allocate()\`, which distributes the rounded total with the largest-remainder method so the parts add up exactly.

There's also a second symptom: the PDF's *Net* row is \`subtotal - footer_discount\` while the amount due is based on the line discounts, so on affected invoices the footer is internally inconsistent too. \`render_invoice\` even logs a warning when they differ.

**Suggested fix** (not applied): compute the percentage discount once on the eligible subtotal, then split it across the lines with \`Money.allocate()\` weighted by line net — the same path fixed discounts take. Footer, line column, API and totals then agree by construction, and \`compute_invoice_totals()\` keeps its signature.`);

// Turn 2: fix it.
user(`Makes sense. Go ahead with the allocate approach. Keep compute_invoice_totals' signature and keep the per-line discounts on the PDF (finance wants them). Make the footer use the same number.`);
act(null, [read('tests/billing/test_invoice_pdf.py', testInvoicePdfPy()), read('ledgerline/billing/model.py', String.raw`"""Plain data of the billing domain (no database, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Mapping

from ledgerline.money import Money


@dataclass(frozen=True, slots=True)
class Customer:
    ref: str
    name: str
    address_lines: tuple[str, ...] = ()
    country_name: str = ""
    vat_number: str | None = None
    locale: str = "en_GB"


@dataclass(frozen=True, slots=True)
class InvoiceLine:
    sku: str
    description: str
    quantity: Decimal
    unit_price: Money
    net: Money
    tax_code: str
    discount_amount: Money
    is_credit: bool = False


@dataclass(frozen=True, slots=True)
class Issuer:
    name: str
    address_lines: tuple[str, ...]
    payment_instructions: str


@dataclass(frozen=True, slots=True)
class Invoice:
    number: str
    issuer: Issuer
    customer: Customer
    lines: tuple[InvoiceLine, ...]
    issued_on: date
    due_on: date | None = None
    tax_rates: Mapping[str, "TaxRate"] = field(default_factory=dict)
    total: Money | None = None
`)]);
act('The PDF test uses helpers to read the table back; let me read them so I understand what the assertions compare.', [read('tests/helpers.py', HELPERS_PY)]);
act('Now the patch: percentage discounts go through `allocate`, and the footer sums the line discounts.', [
  ['apply_patch', { patch: `--- a/ledgerline/billing/discounts.py
+++ b/ledgerline/billing/discounts.py
@@ -50,15 +50,16 @@ def apply_discount(lines: list[InvoiceLine], discount: Discount | None) -> list[InvoiceLine]:
     targets = [i for i, line in enumerate(lines) if eligible(line, discount)]
     if not targets:
         return list(lines)
     out = list(lines)
+    code = lines[targets[0]].net.currency.code
+    eligible_net = sum_money((lines[i].net for i in targets), code)
     if discount.kind is DiscountKind.PERCENTAGE:
-        rate = discount.value / _HUNDRED
-        for i in targets:
-            line = lines[i]
-            out[i] = replace(line, discount_amount=(line.net * rate).round())
+        # Round once on the eligible subtotal, then split: the line discounts
+        # then add up to exactly the footer discount (BILL-2291).
+        total = (eligible_net * (discount.value / _HUNDRED)).round()
     else:
-        code = lines[targets[0]].net.currency.code
-        eligible_net = sum_money((lines[i].net for i in targets), code)
-        fixed = Money.of(discount.value, code)
-        if eligible_net < fixed:
-            fixed = eligible_net
-        parts = fixed.allocate([lines[i].net.amount for i in targets])
-        for i, part in zip(targets, parts):
-            out[i] = replace(lines[i], discount_amount=part)
+        fixed = Money.of(discount.value, code)
+        total = eligible_net if eligible_net < fixed else fixed
+    parts = total.allocate([lines[i].net.amount for i in targets])
+    for i, part in zip(targets, parts):
+        out[i] = replace(lines[i], discount_amount=part)
     return out
@@ -71,10 +72,8 @@ def apply_discount(lines: list[InvoiceLine], discount: Discount | None) -> list[InvoiceLine]:
 def invoice_discount(lines: list[InvoiceLine], discount: Discount | None) -> Money:
-    """The discount printed in the invoice footer, computed on the eligible subtotal."""
+    """The discount printed in the invoice footer: the sum of the line discounts."""
     code = lines[0].net.currency.code
-    if discount is None:
-        return Money.zero(code)
-    eligible_net = sum_money((line.net for line in lines if eligible(line, discount)), code)
-    if discount.kind is DiscountKind.PERCENTAGE:
-        return (eligible_net * (discount.value / _HUNDRED)).round()
-    fixed = Money.of(discount.value, code)
-    return eligible_net if eligible_net < fixed else fixed
+    return sum_money((line.discount_amount for line in apply_discount(lines, discount)), code)
` }, 'patched ledgerline/billing/discounts.py: 2 hunks applied'],
]);
act('Quick check that nothing else relied on `invoice_discount` computing from the subtotal.', [
  ['grep', { pattern: 'invoice_discount\\(', path: '.' }, grep('', [
    ['ledgerline/billing/discounts.py', 73, 'def invoice_discount(lines: list[InvoiceLine], discount: Discount | None) -> Money:'],
    ['ledgerline/billing/invoice_pdf.py', 130, '    footer_discount = invoice_discount(list(invoice.lines), discount)'],
    ['tests/billing/test_discounts.py', 28, '    assert invoice_discount([line("12.00")], d) == Money.of("12.00", EUR)'],
  ])],
  ['grep', { pattern: 'discount_total|totals\\.discount', path: 'ledgerline' }, grep('', [
    ['ledgerline/api/routes/invoices.py', 161, '        discount_total=totals.discount.amount,'],
    ['ledgerline/api/schemas.py', 88, '    discount: str = Field(description="Sum of the line discounts")'],
    ['ledgerline/billing/invoice_pdf.py', 149, '    if totals.discount != footer_discount:'],
    ['ledgerline/reconcile/report.py', 44, '        "discount": inv.discount_total,'],
  ])],
]);
act('Before the full test run, the same three-line example through the new code path:', [
  run(`python -c "from decimal import Decimal; from ledgerline.billing.discounts import *; from tests.helpers import make_invoice; inv = make_invoice(['10.00','33.35','5.05']); d = Discount(DiscountKind.PERCENTAGE, Decimal('10')); out = apply_discount(list(inv.lines), d); print([str(l.discount_amount) for l in out], invoice_discount(list(inv.lines), d))"`, "['1.00 EUR', '3.34 EUR', '0.50 EUR'] 4.84 EUR"),
]);
act(null, [run('pytest tests/billing tests/test_money.py', pytestFailureAfterFirstFix())]);
act('The only failure is the PDF test that hard-coded the old per-line rounding: 3.335 → 3.34 and 0.505 → 0.51 were both rounded up, which is exactly the bug (1.00 + 3.34 + 0.51 = 4.85 against a footer of 4.84). With allocation the one leftover cent goes to the largest remainder (a tie between 3.335 and 0.505, which goes to the earlier line), giving 1.00 + 3.34 + 0.50 = 4.84. I will update the expectation and add a sum check that would have caught this.', [
  ['apply_patch', { patch: `--- a/tests/billing/test_invoice_pdf.py
+++ b/tests/billing/test_invoice_pdf.py
@@ -46,4 +46,6 @@ def test_footer_discount(sample_invoice, pct_10):
 def test_line_discount_column_matches_footer(sample_invoice, pct_10):
     rows = extract_pdf_table(render_invoice(sample_invoice, pct_10))
     line_discounts = [parse_amount(r["Discount"]) for r in rows.lines]
-    assert line_discounts == [Decimal("-1.00"), Decimal("-3.34"), Decimal("-0.51")]
+    # 10% of 48.40 is 4.84, split by weight with largest remainders (BILL-2291)
+    assert line_discounts == [Decimal("-1.00"), Decimal("-3.34"), Decimal("-0.50")]
+    assert sum(line_discounts) == rows.totals["Discount"]
` }, 'patched tests/billing/test_invoice_pdf.py: 1 hunk applied'],
]);
act(null, [run('pytest tests/billing tests/test_money.py -q', pytestQuick(['tests/billing/test_discounts.py', 'tests/billing/test_invoice_pdf.py', 'tests/billing/test_tax.py', 'tests/billing/test_totals.py', 'tests/test_money.py'], [18, 8, 10, 12, 10], '3.12')), run('python scripts/repro_bill_2291.py | tail -n 1', '0 of 24 random invoices: sum of line discounts != footer discount')]);
say(`Fixed.

**Change** — \`ledgerline/billing/discounts.py\`:
- \`apply_discount()\`: a percentage discount is now rounded **once** on the eligible subtotal and split across eligible lines with \`Money.allocate()\` (weights = line net), the path fixed discounts already used. Both kinds now share one code path.
- \`invoice_discount()\` is now the sum of the line discounts, so the footer can't disagree with the column.

\`compute_invoice_totals()\` is unchanged in signature and behaviour apart from the corrected amounts; the PDF still shows per-line discounts.

**Tests** — one expectation in \`tests/billing/test_invoice_pdf.py\` encoded the old rounding (0.505 rounded up to 0.51, column total 4.85 vs footer 4.84); updated to 1.00/3.34/0.50, and the test now also asserts that the column sums to the footer. Unit suite: 58 passed. The reproduction script now reports 0 of 24 mismatches.

Note: on affected invoices a line's discount may differ by a cent from what it was before — intended, but anything that snapshots line discounts (fixtures, PDF snapshots) will need refreshing.`);

// Turn 3: CI failure.
user(`I pushed your change as PR #1184 and the integration job failed. Job id 88213. Can you look?`);
act(null, [run('gh pr checks 1184', `lint            pass    1m12s   https://ci.ledgerline.dev/runs/88211
unit            pass    2m48s   https://ci.ledgerline.dev/runs/88212
integration     fail    4m31s   https://ci.ledgerline.dev/runs/88213
docs            pass    41s     https://ci.ledgerline.dev/runs/88214
build-image     skipping        https://ci.ledgerline.dev/runs/88215`)]);
act(null, [['fetch_ci_log', { job_id: 88213 }, ciLog()]]);
act('The log is long; let me make sure there is nothing else in it besides the test failures (setup errors, flaky retries, migration problems).', [
  ['grep', { pattern: '##\\[error\\]|Traceback|ERROR|WARNING', path: 'ci-88213.log' }, grep('', [
    ['ci-88213.log', int(600, 700), '##[error]Process completed with exit code 1.'],
    ['ci-88213.log', int(720, 760), 'ci-postgres-1  | ERROR:  duplicate key value violates unique constraint "uq_idempotency_key"'],
  ])],
  ['grep', { pattern: 'test_idempotency_key_replay', path: 'ci-88213.log' }, grep('', [
    ['ci-88213.log', int(300, 400), 'PASSED tests/integration/test_api_invoices.py::test_idempotency_key_replay[eur-single-line]'],
    ['ci-88213.log', int(400, 500), 'PASSED tests/integration/test_api_invoices.py::test_idempotency_key_replay[eur-multi-line]'],
  ])],
]);
act('Two failures, both `[discounted-multi-line]`, both because the fixture expects 0.85 on the third line where we now produce 0.84. Let me check the fixture and how it was generated.', [
  ['grep', { pattern: 'discounted-multi-line|line_discounts', path: 'tests/integration' }, grep('', [
    ['tests/integration/test_pdf_snapshots.py', 22, 'CASES = ["discounted-single-line", "discounted-multi-line", "fixed-discount", "applies-to-sku"]'],
    ['tests/integration/test_pdf_snapshots.py', 61, '    assert [parse_amount(r["Discount"]) for r in table.lines] == [-Decimal(x) for x in fixture["expected"]["line_discounts"]]'],
    ['tests/integration/test_api_invoices.py', 131, 'CASES = ["discounted-single-line", "discounted-multi-line", "fixed-discount", "applies-to-sku"]'],
    ['tests/integration/test_api_invoices.py', 142, '    assert [l["discount_amount"] for l in body["lines"]] == fixture["expected"]["line_discounts"]'],
    ['tests/integration/fixtures/README.md', 9, 'Regenerate with `python scripts/regen_fixtures.py invoices_discounted` after a deliberate change to amounts.'],
  ])],
  read('tests/integration/fixtures/invoices_discounted.json', invoicesFixture()),
]);
act('Let me read the failing test and the fixtures README before touching anything.', [
  read('tests/integration/test_pdf_snapshots.py', String.raw`"""The PDF and the API must agree on every amount, for every fixture case."""

import json
from decimal import Decimal

import pytest

from tests.helpers import extract_pdf_table, parse_amount

CASES = ["discounted-single-line", "discounted-multi-line", "fixed-discount", "applies-to-sku"]


@pytest.fixture(scope="module")
def fixtures_dir(pytestconfig):
    return pytestconfig.rootpath / "tests" / "integration" / "fixtures"


@pytest.mark.parametrize("case", CASES)
def test_pdf_matches_api_totals(case, api_client, fixtures_dir):
    fixture = json.loads((fixtures_dir / "invoices_discounted.json").read_text())[case]
    created = api_client.post("/v2/invoices", json=fixture["request"]).raise_for_status().json()
    pdf = api_client.get(f"/v2/invoices/{created['id']}/pdf").raise_for_status().content
    table = extract_pdf_table(pdf)
    assert table.totals["Discount"] == -Decimal(created["totals"]["discount"])
    assert [parse_amount(r["Discount"]) for r in table.lines] == [-Decimal(x) for x in fixture["expected"]["line_discounts"]]
    assert table.totals["Total due"] == Decimal(created["totals"]["total"])


@pytest.mark.parametrize("locale", ["en_GB", "de_DE", "fr_FR"])
def test_pdf_locale(locale, api_client, fixtures_dir):
    fixture = json.loads((fixtures_dir / "invoices_discounted.json").read_text())["eur-multi-line"]
    created = api_client.post("/v2/invoices", json={**fixture["request"], "locale": locale}).json()
    pdf = api_client.get(f"/v2/invoices/{created['id']}/pdf").content
    assert pdf.startswith(b"%PDF-")
`),
  read('tests/integration/fixtures/README.md', md(`# Integration fixtures

Each file maps a case name to a §request§ (the body posted to §/v2/invoices§) and
the §expected§ amounts. The requests are hand-written; the expectations are
computed.

Do not edit expectations by hand. Regenerate with
§python scripts/regen_fixtures.py invoices_discounted§ after a deliberate change
to amounts, and explain every changed value in the pull request.
`)),
  run('git log --oneline -n 5 -- tests/integration/fixtures/invoices_discounted.json', `${token(7, HEX)} Regenerate fixtures for applies_to (#1102)\n${token(7, HEX)} Credit-line case (#1077)\n${token(7, HEX)} Fixed-discount case uses allocate (#1031)\n${token(7, HEX)} PDF/API agreement fixtures (#998)`),
]);
act('The fixtures README says to regenerate after a deliberate change to amounts. Let me look at the script first to make sure it computes expectations from the code under test and not from the database.', [
  read('scripts/regen_fixtures.py', String.raw`"""Recompute the expected values of the integration fixtures from the current code.

Usage: python scripts/regen_fixtures.py NAME [NAME ...]

Only the "expected" part of each case is rewritten; requests are left alone.
Review the diff: a changed expectation must be explained in the PR.
"""

import json
import sys
from decimal import Decimal
from pathlib import Path

from ledgerline.api.schemas import InvoiceCreate
from ledgerline.billing.totals import compute_invoice_totals
from ledgerline.api.routes.invoices import draft_from_request

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "integration" / "fixtures"


def regen(name: str) -> int:
    path = FIXTURES / f"{name}.json"
    cases = json.loads(path.read_text())
    changed = 0
    for key, case in cases.items():
        draft, discount = draft_from_request(InvoiceCreate.model_validate(case["request"]))
        totals = compute_invoice_totals(list(draft.lines), discount, draft.tax_rates)
        expected = {**totals.as_dict(), "line_discounts": [str(l.discount_amount.amount) for l in totals.lines]}
        expected.pop("currency")
        expected.pop("net")
        if expected != case["expected"]:
            changed += 1
            case["expected"] = expected
    path.write_text(json.dumps(cases, indent=2) + "\n")
    return changed


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"{name}: {regen(name)} case(s) changed")
`),
]);
act(null, [run('python scripts/regen_fixtures.py invoices_discounted && git diff --stat tests/integration/fixtures', 'invoices_discounted: 1 case(s) changed\n tests/integration/fixtures/invoices_discounted.json | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)')]);
act(null, [run('git diff tests/integration/fixtures', `diff --git a/tests/integration/fixtures/invoices_discounted.json b/tests/integration/fixtures/invoices_discounted.json
index ${token(7, HEX)}..${token(7, HEX)} 100644
--- a/tests/integration/fixtures/invoices_discounted.json
+++ b/tests/integration/fixtures/invoices_discounted.json
@@ -${int(120, 160)},7 +${int(120, 160)},7 @@
         "line_discounts": [
           "12.47",
           "3.12",
-          "0.85",
+          "0.84",
           "31.19"
         ]`)]);
act(null, [run(`python -m json.tool tests/integration/fixtures/invoices_discounted.json > /dev/null && echo valid; python -c "import json; c=json.load(open('tests/integration/fixtures/invoices_discounted.json'))['discounted-multi-line']['expected']; from decimal import Decimal as D; print(sum(map(D, c['line_discounts'])), c['discount'])"`, 'valid\n47.62 47.62')]);
act('Only the one line changed, and the invoice-level discount (47.62) is unchanged — the fix moved a cent between lines, it did not change what the customer pays overall. Running the integration tests locally against the compose database:', [
  run('docker compose -f ci/compose.yml up -d --wait postgres redis && pytest tests/integration -q -n 2 -k "discount or pdf"', `[+] Running 2/2
 ✔ Container ci-redis-1     Healthy                                                         1.2s
 ✔ Container ci-postgres-1  Healthy                                                         3.9s
bringing up nodes...
${'.'.repeat(72)} [ 76%]
${'.'.repeat(22)}                                                   [100%]
94 passed, 223 deselected in 38.20s`),
]);
say(`CI failure explained and fixed.

**What failed:** 2 tests in job 88213, \`test_pdf_matches_api_totals[discounted-multi-line]\` and \`test_discount_applied[discounted-multi-line]\`. Both compare line discounts with \`tests/integration/fixtures/invoices_discounted.json\`, whose expectations were generated with the old per-line rounding: the third line expected 0.85 and now gets 0.84. The invoice discount (47.62) and every total are unchanged.

**Fix:** regenerated that fixture with \`scripts/regen_fixtures.py invoices_discounted\` (the documented procedure). The diff is exactly one value, 0.85 → 0.84. No code change.

**Verified:** integration tests touching discounts and PDFs pass locally against the compose database (94 passed). The rest of the CI log is clean: 311 passed, 4 skipped (S3 bucket not configured on PR jobs).`);

// Turn 4: reconciliation log.
user(`Ops flagged that last night's reconciliation run paged finance with a pile of mismatches. Are those the same bug? The log is at logs/reconcile-2024-05-14.log on the shared volume (mounted in the repo).`);
act(null, [read('logs/reconcile-2024-05-14.log', reconcileLog())]);
act('That is a long log. Before digging in, the overall shape:', [
  run(`wc -l logs/reconcile-2024-05-14.log; grep -c 'discount=percentage' logs/reconcile-2024-05-14.log; grep -E 'ERROR|Traceback' logs/reconcile-2024-05-14.log | head -n 3`, `${int(380, 420)} logs/reconcile-2024-05-14.log\n36\n2024-05-14T02:${pad(int(3, 6), 2)}:${pad(int(0, 59), 2)}.${pad(int(0, 999), 3)}Z ERROR db.session           OperationalError during batch fetch, retrying in 2.0s (attempt 1/3)\nTraceback (most recent call last):`),
]);
act('Let me tally the warnings by reason and delta, and read the job to see how "expected" is computed.', [
  run(`grep -c 'WARN' logs/reconcile-2024-05-14.log; grep 'WARN' logs/reconcile-2024-05-14.log | grep -o 'reason=[a-z_]*' | sort | uniq -c; grep 'WARN' logs/reconcile-2024-05-14.log | grep -o 'delta=[-0-9.]*' | sort | uniq -c`, `41\n     28 reason=amount_mismatch\n      4 reason=fx_rounding\n      9 reason=underpaid\n     19 delta=-0.01\n      2 delta=-0.02\n     18 delta=0.01\n      2 delta=0.02`),
  read('ledgerline/reconcile/nightly.py', NIGHTLY_PY),
]);
act('The job compares `invoice.total_due` (stored at issue time, from `compute_invoice_totals`) with what was paid. Customers pay what the PDF footer implies, so the bug would show up as ±0.01 deltas on percentage-discounted invoices. Let me check that against the database rather than guess.', [
  run(`python - <<'EOF'
from ledgerline.db.session import session_scope
from ledgerline.db import models as m
from sqlalchemy import select
with session_scope(readonly=True) as s:
    rows = s.execute(select(m.ReconcileMismatch.reason, m.ReconcileMismatch.delta, m.Invoice.discount_kind, m.Invoice.line_count)
        .join(m.Invoice).where(m.ReconcileMismatch.run_id == "rc-20240514")).all()
from collections import Counter
print(Counter((r.reason, str(r.delta), r.discount_kind, r.line_count > 1) for r in rows).most_common())
EOF`, `[(('amount_mismatch', '0.01', 'percentage', True), 17), (('underpaid', '-0.01', 'percentage', True), 15), (('amount_mismatch', '0.01', 'percentage', False), 1), (('underpaid', '-0.01', 'percentage', True), 2), (('fx_rounding', '0.02', None, True), 2), (('fx_rounding', '-0.02', None, False), 2), (('amount_mismatch', '0.01', None, True), 1), (('underpaid', '-0.01', 'fixed', True), 1)]`),
]);
act('Four of them are cross-currency; let me read fx.py to confirm the tolerance logic, and pull the three mismatches that do not fit the pattern.', [
  read('ledgerline/fx.py', FX_PY),
  run(`grep 'WARN' logs/reconcile-2024-05-14.log | grep -v 'discount=percentage' | grep -v fx_rounding`, Array.from({ length: 3 }, () => `2024-05-14T02:${pad(int(0, 20), 2)}:${pad(int(0, 59), 2)}.${pad(int(0, 999), 3)}Z WARN  reconcile.nightly    invoice=INV-2024-${pad(int(100000, 130000), 6)} customer=${pick(CUSTOMERS)} expected=${money(20, 900)} received=${money(20, 900)} delta=${pick(['0.01', '-0.01'])} currency=EUR reason=${pick(['amount_mismatch', 'underpaid'])}`).join('\n')),
]);
say(`Mostly yes. Of the 41 mismatches in run rc-20240514:

| group | count | related to BILL-2291? |
|---|---:|---|
| ±0.01, percentage discount, multi-line invoice | 34 | **yes** — the customer paid the footer amount, the ledger holds the per-line total |
| ±0.02, cross-currency payment (\`fx_rounding\`) | 4 | no — within the FX tolerance, expected noise; these don't page |
| +0.01, percentage discount, **single-line** invoice | 1 | no — single-line invoices can't hit this bug; worth a look |
| +0.01, no discount | 1 | no |
| −0.01, **fixed** discount | 1 | no — fixed discounts were already allocated correctly |

So 34 of the 37 that paged finance are this bug; 3 are something else and should be checked by hand (invoice numbers are in the WARN lines; I can pull them out if you want).

The job itself looks right: it compares the stored \`total_due\` with payments. Two things I noticed while reading it, not urgent:
- \`invoices_checked=?\` in the summary line is a placeholder that was never filled in (nightly.py, the final \`log.info\`).
- There was a transient \`OperationalError\` on batch 6 (replica connection dropped); the retry worked.

The fix prevents new cases; the 34 existing invoices still have a one-cent difference between what was paid and \`total_due\`. Finance will need to write those off or issue adjustments — that's a data decision, so I haven't touched anything.`);

// Turn 5: property-based tests.
user(`Good analysis. Finance will handle the existing ones. Now I want regression tests so this can't come back — property-based, with hypothesis (it's already a dev dependency). Cover both discount kinds, credit lines, and applies_to.`);
act(null, [
  read('tests/billing/test_discounts.py', String.raw`from decimal import Decimal

import pytest

from ledgerline.billing.discounts import Discount, DiscountKind, apply_discount, invoice_discount
from ledgerline.money import Money, MoneyError
from tests.billing.test_totals import line

EUR = "EUR"


def test_percentage_rounds_half_up():
    out = apply_discount([line("0.05")], Discount(DiscountKind.PERCENTAGE, Decimal("50")))
    assert out[0].discount_amount == Money.of("0.03", EUR)


def test_percentage_of_zero_line():
    out = apply_discount([line("0.00"), line("10.00", sku="S2")], Discount(DiscountKind.PERCENTAGE, Decimal("10")))
    assert [l.discount_amount for l in out] == [Money.zero(EUR), Money.of("1.00", EUR)]


def test_fixed_split_sums_exactly():
    out = apply_discount([line("1.00"), line("1.00", sku="S2"), line("1.00", sku="S3")],
                         Discount(DiscountKind.FIXED, Decimal("1")))
    assert sorted(l.discount_amount.amount for l in out) == [Decimal("0.33"), Decimal("0.33"), Decimal("0.34")]


def test_fixed_capped():
    d = Discount(DiscountKind.FIXED, Decimal("100"))
    assert invoice_discount([line("12.00")], d) == Money.of("12.00", EUR)


def test_applies_to():
    d = Discount(DiscountKind.PERCENTAGE, Decimal("10"), applies_to=frozenset({"S2"}))
    out = apply_discount([line("10.00"), line("10.00", sku="S2")], d)
    assert [l.discount_amount.amount for l in out] == [Decimal("0.00"), Decimal("1.00")]


def test_credit_lines_skipped():
    d = Discount(DiscountKind.PERCENTAGE, Decimal("10"))
    out = apply_discount([line("10.00"), line("-5.00", sku="R", credit=True)], d)
    assert out[1].discount_amount == Money.zero(EUR)


@pytest.mark.parametrize("value", ["0", "-5", "100.01"])
def test_invalid_percentage(value):
    with pytest.raises(MoneyError):
        Discount(DiscountKind.PERCENTAGE, Decimal(value))


def test_negative_value_rejected():
    with pytest.raises(MoneyError):
        Discount(DiscountKind.FIXED, Decimal("-1"))
`),
  run('pip show hypothesis | head -n 2; grep -n "hypothesis" pyproject.toml', 'Name: hypothesis\nVersion: 6.100.2\n41:    "hypothesis>=6.100",\n88:[tool.hypothesis]\n89:profile = "ci"'),
]);
act('Let me see how the tests are configured for hypothesis (profiles, deadlines) so the new tests behave the same in CI.', [
  run('sed -n 80,100p pyproject.toml; cat tests/conftest.py', `[tool.pytest.ini_options]
addopts = "-ra --strict-markers"
testpaths = ["tests"]
markers = ["integration: needs the compose database"]

[tool.hypothesis]
profile = "ci"

[tool.mypy]
strict = true
plugins = ["pydantic.mypy"]
ignore_missing_imports = false
---
import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=50, deadline=400)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))`),
]);
act('Writing the property tests.', [
  ['write_file', { path: 'tests/billing/test_discount_properties.py', content: String.raw`"""Properties of invoice discounts (BILL-2291): whatever the lines, the
per-line discounts add up to the footer discount, never exceed what they
apply to, and leave credit lines and non-listed SKUs alone."""

from decimal import Decimal

from hypothesis import given, settings, strategies as st

from ledgerline.billing.discounts import Discount, DiscountKind, apply_discount, eligible, invoice_discount
from ledgerline.money import Money, sum_money
from tests.billing.test_totals import line

EUR = "EUR"
SKUS = ["A", "B", "C", "D"]

cents = st.integers(min_value=0, max_value=5_000_000).map(lambda c: f"{Decimal(c) / 100:.2f}")
lines_st = st.lists(
    st.tuples(cents, st.sampled_from(SKUS), st.booleans()).map(
        lambda t: line(f"-{t[0]}" if t[2] else t[0], sku=t[1], credit=t[2])
    ),
    min_size=1,
    max_size=12,
)
percentage = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("100"), places=2).map(
    lambda v: Discount(DiscountKind.PERCENTAGE, v)
)
fixed = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("100000"), places=2).map(
    lambda v: Discount(DiscountKind.FIXED, v)
)
applies = st.one_of(st.none(), st.frozensets(st.sampled_from(SKUS), min_size=1))
discounts = st.tuples(st.one_of(percentage, fixed), applies).map(
    lambda t: Discount(t[0].kind, t[0].value, applies_to=t[1])
)


@given(lines_st, discounts)
@settings(max_examples=400)
def test_line_discounts_sum_to_footer(lines, discount):
    out = apply_discount(lines, discount)
    assert sum_money((l.discount_amount for l in out), EUR) == invoice_discount(lines, discount)


@given(lines_st, discounts)
def test_discount_never_exceeds_eligible_net(lines, discount):
    for before, after in zip(lines, apply_discount(lines, discount)):
        assert Money.zero(EUR) <= after.discount_amount
        if eligible(before, discount):
            assert after.discount_amount <= before.net


@given(lines_st, discounts)
def test_credit_lines_untouched(lines, discount):
    for before, after in zip(lines, apply_discount(lines, discount)):
        if before.is_credit or (discount.applies_to is not None and before.sku not in discount.applies_to):
            assert after.discount_amount == Money.zero(EUR)
` }, 'wrote tests/billing/test_discount_properties.py (58 lines)'],
]);
act(null, [run('pytest tests/billing/test_discount_properties.py -q', `F..
=================================== FAILURES ===================================
______________________ test_line_discounts_sum_to_footer _______________________
  + Exception Group Traceback (most recent call last):
  |   File "/workspace/ledgerline/tests/billing/test_discount_properties.py", line 38, in test_line_discounts_sum_to_footer
  |     @settings(max_examples=400)
  |                    ^^^
  |   File "/workspace/ledgerline/.venv/lib/python3.12/site-packages/hypothesis/core.py", line 1708, in wrapped_test
  |     raise the_error_hypothesis_found
  | ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/workspace/ledgerline/tests/billing/test_discount_properties.py", line 40, in test_line_discounts_sum_to_footer
    |     out = apply_discount(lines, discount)
    |           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    |   File "/workspace/ledgerline/ledgerline/billing/discounts.py", line 63, in apply_discount
    |     parts = total.allocate([lines[i].net.amount for i in targets])
    |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    |   File "/workspace/ledgerline/ledgerline/money.py", line 103, in allocate
    |     raw = [Decimal(units) * Decimal(w) / total for w in weights]
    |            ~~~~~~~~~~~~~~~~~~~~~~~~~~~~^~~~~~~
    | decimal.InvalidOperation: [<class 'decimal.DivisionUndefined'>]
    | Falsifying example: test_line_discounts_sum_to_footer(
    |     lines=[InvoiceLine(sku='A', description='Item A', quantity=Decimal('1'), unit_price=Money('0.00', 'EUR'), net=Money('0.00', 'EUR'), tax_code='standard', discount_amount=Money('0.00', 'EUR'), is_credit=False)],
    |     discount=Discount(kind=<DiscountKind.PERCENTAGE: 'percentage'>, value=Decimal('0.01'), code=None, applies_to=None),
    | )
    +---------------- 2 ----------------
    | Traceback (most recent call last):
    |   File "/workspace/ledgerline/tests/billing/test_discount_properties.py", line 40, in test_line_discounts_sum_to_footer
    |     out = apply_discount(lines, discount)
    |           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    |   File "/workspace/ledgerline/ledgerline/billing/discounts.py", line 63, in apply_discount
    |     parts = total.allocate([lines[i].net.amount for i in targets])
    |             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
    |   File "/workspace/ledgerline/ledgerline/money.py", line 103, in allocate
    |     raw = [Decimal(units) * Decimal(w) / total for w in weights]
    |            ~~~~~~~~~~~~~~~~~~~~~~~~~~~~^~~~~~~
    | decimal.DivisionByZero: [<class 'decimal.DivisionByZero'>]
    | Falsifying example: test_line_discounts_sum_to_footer(
    |     lines=[InvoiceLine(sku='A', description='Item A', quantity=Decimal('1'), unit_price=Money('0.00', 'EUR'), net=Money('0.00', 'EUR'), tax_code='standard', discount_amount=Money('0.00', 'EUR'), is_credit=False)],
    |     discount=Discount(kind=<DiscountKind.FIXED: 'fixed'>, value=Decimal('0.01'), code=None, applies_to=None),
    | )
    +------------------------------------

=========================== short test summary info ============================
FAILED tests/billing/test_discount_properties.py::test_line_discounts_sum_to_footer - ExceptionGroup: Hypothesis found 2 distinct failures. (2 sub-exceptions)
1 failed, 2 passed in 6.83s`)]);
act('Two distinct failures. Let me reproduce the first one directly to see which branch it takes.', [
  run(`python -c "from decimal import Decimal; from ledgerline.money import Money; print(Money.zero('EUR').allocate([Decimal('0.00')]))"`, `Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "/workspace/ledgerline/ledgerline/money.py", line 103, in allocate
    raw = [Decimal(units) * Decimal(w) / total for w in weights]
           ~~~~~~~~~~~~~~~~~~~~~~~~~~~~^~~~~~~
decimal.InvalidOperation: [<class 'decimal.DivisionUndefined'>]`),
  run('git stash list; git log -1 --format=%h', `${token(7, HEX)}`),
]);
act('Hypothesis found a real edge case: when every eligible line has a net of 0.00 the weights sum to zero and `allocate` divides by zero (0/0 for a percentage, x/0 for fixed). Before my change the percentage path never called `allocate`, so this is a regression I introduced — a zero-value line with a promo code (free trial seat) is realistic. The fix belongs in `allocate`: with zero total weight there is nothing to split by, and the amount to split is itself zero (a percentage of 0, or a fixed discount capped at the eligible net of 0).', [
  read('ledgerline/money.py', MONEY_PY.split('\n').slice(86, 112).join('\n'), 87),
]);
act(null, [
  ['apply_patch', { patch: `--- a/ledgerline/money.py
+++ b/ledgerline/money.py
@@ -97,9 +97,15 @@ class Money:
         if not weights:
             raise MoneyError("allocate() needs at least one weight")
         if not self.is_rounded():
             raise MoneyError(f"allocate() needs a rounded amount, got {self.amount}")
+        if any(Decimal(w) < 0 for w in weights):
+            raise MoneyError("allocate() weights must not be negative")
         total = sum(Decimal(w) for w in weights)
         unit = self.exponent
+        if total == 0:
+            if self.amount != 0:
+                raise MoneyError(f"cannot allocate {self} over weights that sum to zero")
+            return [Money(Decimal(0) * unit, self.currency) for _ in weights]
         units = int(self.amount / unit)
         raw = [Decimal(units) * Decimal(w) / total for w in weights]
` }, 'patched ledgerline/money.py: 1 hunk applied'],
  ['apply_patch', { patch: `--- a/tests/test_money.py
+++ b/tests/test_money.py
@@ -61,3 +61,16 @@ def test_allocate_largest_remainder():
     parts = Money.of("0.05", "EUR").allocate([1, 1, 1])
     assert [p.amount for p in parts] == [Decimal("0.02"), Decimal("0.02"), Decimal("0.01")]
+
+
+def test_allocate_zero_weights():
+    assert Money.zero("EUR").allocate([0, 0]) == [Money.zero("EUR"), Money.zero("EUR")]
+    with pytest.raises(MoneyError, match="sum to zero"):
+        Money.of("1.00", "EUR").allocate([0, 0])
+
+
+def test_allocate_negative():
+    with pytest.raises(MoneyError, match="must not be negative"):
+        Money.of("1.00", "EUR").allocate([1, -1])
` }, 'patched tests/test_money.py: 1 hunk applied'],
]);
act(null, [run('pytest tests/billing tests/test_money.py -q', pytestQuick(['tests/billing/test_discount_properties.py', 'tests/billing/test_discounts.py', 'tests/billing/test_invoice_pdf.py', 'tests/billing/test_tax.py', 'tests/billing/test_totals.py', 'tests/test_money.py'], [3, 18, 8, 10, 12, 12], '9.64'))]);
act('Let me also look at the hypothesis statistics, to make sure the interesting cases (credit lines, zero lines, applies_to) are actually generated and not filtered away.', [
  run('pytest tests/billing/test_discount_properties.py -q --hypothesis-show-statistics', hypothesisStats()),
]);
act('All green. To be sure the properties really guard the bug, I will temporarily revert the percentage path to per-line rounding and check that the property test catches it.', [
  run('git stash push ledgerline/billing/discounts.py -q && pytest tests/billing/test_discount_properties.py -q -x 2>&1 | tail -n 12; git stash pop -q && git diff --stat', `    |     assert sum_money((l.discount_amount for l in out), EUR) == invoice_discount(lines, discount)
    | AssertionError: assert Money('0.02', 'EUR') == Money('0.01', 'EUR')
    | Falsifying example: test_line_discounts_sum_to_footer(
    |     lines=[InvoiceLine(sku='A', ..., net=Money('0.05', 'EUR'), ...), InvoiceLine(sku='A', ..., net=Money('0.05', 'EUR'), ...)],
    |     discount=Discount(kind=<DiscountKind.PERCENTAGE: 'percentage'>, value=Decimal('10.00'), code=None, applies_to=None),
    | )
=========================== short test summary info ============================
FAILED tests/billing/test_discount_properties.py::test_line_discounts_sum_to_footer - AssertionError: assert Money('0.02', 'EUR') == Money('0.01', 'EUR')
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
1 failed in 1.91s
 ledgerline/billing/discounts.py                | 27 ++++++-------
 ledgerline/money.py                             |  6 +++
 scripts/repro_bill_2291.py                      | 24 +++++++++++
 tests/billing/test_discount_properties.py       | 58 ++++++++++++++++++++++++++
 tests/billing/test_invoice_pdf.py               |  3 +-
 tests/integration/fixtures/invoices_discounted.json |  2 +-
 tests/test_money.py                             | 13 ++++++
 7 files changed, 118 insertions(+), 15 deletions(-)`),
]);
say(`Regression tests added, and they found one more bug on the way.

**New:** \`tests/billing/test_discount_properties.py\` — three hypothesis properties over random invoices (1–12 lines, amounts 0.00–50,000.00, credit lines, random \`applies_to\`, both discount kinds):
1. the line discounts sum exactly to the footer discount (the BILL-2291 property; 400 examples);
2. no line's discount is negative or larger than its net;
3. credit lines and lines outside \`applies_to\` get no discount.

**Checked that it bites:** with the old per-line rounding restored, property 1 fails immediately with a two-line, 0.05 + 0.05 at 10% example (0.02 vs 0.01).

**Bug it found:** \`Money.allocate()\` divided by zero when all eligible lines are 0.00 (e.g. a free seat with a promo code). My fix routed percentage discounts through \`allocate\`, so that would have been a new crash. \`allocate\` now returns zeros when the weights sum to zero and the amount is zero, raises a clear \`MoneyError\` if asked to split a non-zero amount over zero weights, and rejects negative weights. Two unit tests cover it.

Billing + money suite: 63 passed.`);

// Turn 6: full suite, mypy, ruff.
user(`Great. Before I review: run the full unit suite, mypy and ruff, and fix whatever they complain about in files you touched.`);
act(null, [
  run('pytest tests --ignore=tests/integration -v -p no:randomly', fullSuiteVerbose()),
  run('mypy ledgerline tests/billing', `ledgerline/billing/discounts.py:17: error: Module "ledgerline.money" has no attribute "MoneyError"; maybe "Money"?  [attr-defined]
ledgerline/reconcile/nightly.py:109: error: Argument 2 to "info" of "Logger" has incompatible type "str"; expected "int"  [arg-type]
Found 2 errors in 2 files (checked 47 source files)`),
  run('ruff check ledgerline tests scripts', `ledgerline/billing/discounts.py:65:20: B905 \`zip()\` without an explicit \`strict=\` parameter
scripts/repro_bill_2291.py:3:1: I001 [*] Import block is un-sorted or un-formatted
scripts/repro_bill_2291.py:19:5: F841 Local variable \`bad\` is assigned to but never used
tests/billing/test_discount_properties.py:9:66: F401 [*] \`ledgerline.billing.discounts.eligible\` imported but unused
Found 4 errors.
[*] 2 fixable with the \`--fix\` option.`),
]);
act('The full suite output is long; only the summary matters, and it is green. Let me look at the ruff report on discounts.py in context.', [
  read('ledgerline/billing/discounts.py', String.raw`def apply_discount(lines: list[InvoiceLine], discount: Discount | None) -> list[InvoiceLine]:
    """The lines with ${BT}discount_amount${BT} set for ${BT}discount${BT}. Lines are not mutated."""
    if discount is None:
        return list(lines)
    targets = [i for i, line in enumerate(lines) if eligible(line, discount)]
    if not targets:
        return list(lines)
    out = list(lines)
    code = lines[targets[0]].net.currency.code
    eligible_net = sum_money((lines[i].net for i in targets), code)
    if discount.kind is DiscountKind.PERCENTAGE:
        # Round once on the eligible subtotal, then split: the line discounts
        # then add up to exactly the footer discount (BILL-2291).
        total = (eligible_net * (discount.value / _HUNDRED)).round()
    else:
        fixed = Money.of(discount.value, code)
        total = eligible_net if eligible_net < fixed else fixed
    parts = total.allocate([lines[i].net.amount for i in targets])
    for i, part in zip(targets, parts):
        out[i] = replace(lines[i], discount_amount=part)
    return out`, 47),
]);
act('Unit suite is green. ruff B905 on discounts.py:65 is real and mine: `zip(targets, parts)` would silently drop lines if `allocate` ever returned fewer parts than targets; it should be `strict=True`. mypy: the `MoneyError` report is a stale cache (it is in `__all__` and defined at money.py:21). The nightly.py one predates my change. ruff: `eligible` is actually used in the second property, so that report looks wrong — let me double-check with a fresh cache.', [
  run('rm -rf .mypy_cache && mypy ledgerline tests/billing 2>&1 | tail -n 4; ruff check --no-cache tests/billing/test_discount_properties.py', `ledgerline/reconcile/nightly.py:109: error: Argument 2 to "info" of "Logger" has incompatible type "str"; expected "int"  [arg-type]
Found 1 error in 1 file (checked 47 source files)
All checks passed!`),
]);
act('As expected: the stale reports are gone. The mypy error left in nightly.py is pre-existing (the `invoices_checked=?` placeholder from the reconciliation log — the format string says `%s` but the fix is to pass the real count). I will fix mine, and remove the throwaway repro script rather than lint it.', [
  ['apply_patch', { patch: `--- a/ledgerline/billing/discounts.py
+++ b/ledgerline/billing/discounts.py
@@ -62,6 +62,6 @@ def apply_discount(lines: list[InvoiceLine], discount: Discount | None) -> list[InvoiceLine]:
         fixed = Money.of(discount.value, code)
         total = eligible_net if eligible_net < fixed else fixed
     parts = total.allocate([lines[i].net.amount for i in targets])
-    for i, part in zip(targets, parts):
+    for i, part in zip(targets, parts, strict=True):
         out[i] = replace(lines[i], discount_amount=part)
     return out
` }, 'patched ledgerline/billing/discounts.py: 1 hunk applied'],
  run('rm scripts/repro_bill_2291.py', ''),
]);
act(null, [
  run('mypy ledgerline/billing ledgerline/money.py tests/billing && ruff check ledgerline tests scripts && pytest tests --ignore=tests/integration -q -n 2', `Success: no issues found in 14 source files
All checks passed!
bringing up nodes...
${'.'.repeat(80)} [ 31%]
${'.'.repeat(80)} [ 63%]
${'.'.repeat(80)} [ 94%]
${'.'.repeat(14)}                                                               [100%]
254 passed in 23.08s`),
]);
act(null, [run('git status --short', ` M CHANGELOG.md
 M ledgerline/billing/discounts.py
 M ledgerline/money.py
 M tests/billing/test_invoice_pdf.py
 M tests/integration/fixtures/invoices_discounted.json
 M tests/test_money.py
?? tests/billing/test_discount_properties.py`.replace(' M CHANGELOG.md\n', ''))]);
act(null, [run('ruff format --check ledgerline/billing ledgerline/money.py tests/billing tests/test_money.py', '14 files already formatted')]);
say(`All clean for the files I touched.

- **pytest** (unit suite, integration excluded): 254 passed.
- **ruff**: one real finding in my change — \`zip(targets, parts)\` in \`apply_discount\` without \`strict=True\` (B905); fixed, so a length mismatch would raise instead of silently skipping lines. The F401 on \`eligible\` was a stale cache; the other two were in the throwaway repro script, which I deleted.
- **mypy**: clean for billing, money and tests. The \`MoneyError\` report was a stale cache (gone after clearing \`.mypy_cache\`).

One pre-existing mypy error remains, outside my change: \`ledgerline/reconcile/nightly.py:109\` logs \`"?"\` for \`invoices_checked\` — the same placeholder we saw in the reconciliation log. It's a one-line fix (count the invoices in the loop). I left it for a separate PR to keep this one about BILL-2291; say if you want it here.`);

// Turn 7: changelog and docs.
user(`Leave nightly.py for another PR. Please update CHANGELOG.md and the discounts page in docs so support can point customers at it.`);
act(null, [read('CHANGELOG.md', changelog()), read('docs/billing/discounts.md', DOCS_DISCOUNTS_MD)]);
act('Is this page linked from anywhere support uses, and does any other page repeat the old wording?', [
  run(`grep -rn "same share\\|discounts.md" docs mkdocs.yml`, `docs/billing/discounts.md:13:A percentage discount takes the same share off every eligible line. The value
mkdocs.yml:31:      - Discounts: billing/discounts.md
docs/operations.md:118:See [Discounts](billing/discounts.md) for how amounts are rounded.`),
]);
act('The docs say percentage discounts take "the same share off every eligible line", which is no longer exactly true at the cent level. I will document the allocation and the guarantee, and add a changelog entry under Unreleased.', [
  ['apply_patch', { patch: `--- a/CHANGELOG.md
+++ b/CHANGELOG.md
@@ -6,2 +6,12 @@
 ## [Unreleased]
 
+### Fixed
+
+- Percentage discounts: the discount in the invoice footer could differ by a cent or more from
+  the sum of the per-line discounts on multi-line invoices, because each line was rounded on its
+  own. The discount is now rounded once on the eligible subtotal and split across the lines with
+  the largest-remainder method, as fixed discounts already were. Line discounts on existing
+  invoices are not changed; new invoices may show a line discount one cent different from before
+  (BILL-2291, #1184).
+- Allocating a discount over lines that are all 0.00 no longer raises a division error (#1184).
+
` }, 'patched CHANGELOG.md: 1 hunk applied'],
  ['apply_patch', { patch: md(`--- a/docs/billing/discounts.md
+++ b/docs/billing/discounts.md
@@ -11,12 +11,20 @@
 ## Percentage discounts
 
-A percentage discount takes the same share off every eligible line. The value
-is a number greater than 0 and at most 100; fractional percentages such as
-§7.5§ are allowed.
+A percentage discount is computed once, on the subtotal of the eligible lines,
+and rounded to the currency's minor unit. That amount is then split across the
+eligible lines in proportion to their net amounts. The value is a number
+greater than 0 and at most 100; fractional percentages such as §7.5§ are
+allowed.
 
 §§§json
 { "discount": { "kind": "percentage", "value": "15", "code": "SPRING15" } }
 §§§
 
 Each line's discount is shown in the *Discount* column of the PDF and in
-§lines[].discount_amount§ in the API. The footer shows the invoice discount.
+§lines[].discount_amount§ in the API. The footer shows the invoice discount,
+which is always exactly the sum of the line discounts.
+
+Because the split works in whole cents, a line's discount can differ by one
+cent from "its percentage of the line": 10% of 5.05 may show as 0.50 or 0.51
+depending on the other lines. The invoice total is what the percentage says.
`) }, 'patched docs/billing/discounts.md: 1 hunk applied'],
]);
act(null, [run('python -m mkdocs build --strict -q 2>&1 | tail -n 3; echo exit=$?', 'exit=0')]);
say(`Done.

- **CHANGELOG.md** — two entries under *Unreleased → Fixed*: the footer/line mismatch for percentage discounts (BILL-2291, #1184), including the note that new invoices may show a line discount one cent different from before, and the zero-amount allocation crash.
- **docs/billing/discounts.md** — the *Percentage discounts* section now says how the discount is computed (once on the eligible subtotal, then split by line net), that the footer always equals the sum of the line discounts, and why a single line can be a cent off its naive percentage. That last paragraph is the one support can quote to customers.

The docs build passes in strict mode.`);

// Turn 8: PR description.
user(`Perfect. Last thing: write the PR description for #1184. Markdown, for reviewers who haven't followed this thread.`);
act('Let me check the PR template the repository uses.', [
  read('.github/pull_request_template.md', md(`## What and why

<!-- The problem, in a few sentences, for someone who has not seen the ticket. -->

## Change

<!-- Files and behaviour. Call out any API or data change. -->

## Visible effect

<!-- What users, support or finance will notice. -->

## Tests

<!-- What you ran, what you added. -->
`)),
]);
act(null, [run('gh pr view 1184 --json title,state,headRefName,reviewRequests', `{"headRefName":"fix/bill-2291-discount-rounding","reviewRequests":[{"login":"jonas-keller"},{"login":"finance-eng"}],"state":"OPEN","title":"Round percentage discounts once and allocate them across lines"}`)]);
act(null, [run('git diff --stat origin/main...HEAD; git log --oneline origin/main..HEAD', ` CHANGELOG.md                                        | 10 +++++
 docs/billing/discounts.md                           | 16 ++++++--
 ledgerline/billing/discounts.py                     | 29 +++++++-------
 ledgerline/money.py                                 |  6 +++
 tests/billing/test_discount_properties.py           | 58 ++++++++++++++++++++++++++++
 tests/billing/test_invoice_pdf.py                   |  3 +-
 tests/integration/fixtures/invoices_discounted.json |  2 +-
 tests/test_money.py                                 | 13 +++++++
 8 files changed, 121 insertions(+), 16 deletions(-)
${token(7, HEX)} Docs and changelog for BILL-2291
${token(7, HEX)} Property tests for discounts; allocate() handles zero weights
${token(7, HEX)} Regenerate invoices_discounted fixture after the rounding fix
${token(7, HEX)} Round percentage discounts once and allocate them across lines (BILL-2291)`)]);
say(md(`## Fix: invoice footer discount ≠ sum of line discounts (BILL-2291)

### Problem
On multi-line invoices with a **percentage** discount, the discount in the PDF footer could differ by one cent or more from the sum of the *Discount* column. Two computations of the same number disagreed:

- §apply_discount()§ rounded each line's discount on its own — used for the line column, the API and §compute_invoice_totals()§ (and so the amount due);
- §invoice_discount()§ rounded once on the subtotal — used for the PDF footer.

Sum-of-rounded ≠ rounded-sum. Customers who paid the footer amount show up in the nightly reconciliation as ±0.01 mismatches: 34 of the 37 that paged finance on 2024-05-14 are this bug.

### Change
- **§ledgerline/billing/discounts.py§** — a percentage discount is rounded once on the eligible subtotal and split across the eligible lines with §Money.allocate()§ (largest remainder, weighted by line net), the same path fixed discounts already took. §invoice_discount()§ is now the sum of the line discounts, so the footer and the column agree by construction.
- **§ledgerline/money.py§** — §allocate()§ handles weights that sum to zero (all lines 0.00) instead of dividing by zero, and rejects negative weights. Found by the new property tests; without it the change above would crash on free lines with a promo code.
- No API or signature changes. §compute_invoice_totals()§ is unchanged.

### Visible effect
New invoices may show a line discount one cent different from before (e.g. 0.50 instead of 0.51); the invoice discount and total are what the percentage says. Existing invoices are untouched. Finance is handling the 34 historical one-cent differences separately.

### Tests
- §tests/billing/test_discount_properties.py§ (new): hypothesis properties — line discounts sum to the footer; no line discount is negative or above its net; credit lines and lines outside §applies_to§ are untouched. Verified that the first property fails against the old code.
- §tests/test_money.py§: zero-weight and negative-weight allocation.
- §tests/billing/test_invoice_pdf.py§: one expectation encoded the old rounding; updated.
- §tests/integration/fixtures/invoices_discounted.json§: regenerated with §scripts/regen_fixtures.py§; one value changes (0.85 → 0.84).
- Unit suite 254 passed; mypy and ruff clean on touched files; discount/PDF integration tests pass locally.

### Not in this PR
§reconcile/nightly.py§ logs §invoices_checked=?§ (a pre-existing mypy error) — separate PR.`));

// ---------------------------------------------------------------------------------------------

const json = JSON.stringify({ messages }, null, 1) + '\n';
if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(OUT, 'utf8');
  } catch {}
  if (current !== json) {
    console.error('examples/long-conversation.json is out of date: run node scripts/make-example.mjs');
    process.exit(1);
  }
  console.log('examples/long-conversation.json is up to date');
} else {
  writeFileSync(OUT, json);
  const roles = messages.reduce((acc, m) => ((acc[m.role] = (acc[m.role] ?? 0) + 1), acc), {});
  const chars = messages.reduce((a, m) => a + (m.content?.length ?? 0) + JSON.stringify(m.tool_calls ?? '').length, 0);
  console.log(`wrote examples/long-conversation.json: ${messages.length} messages (${Object.entries(roles).map(([r, n]) => `${n} ${r}`).join(', ')}), ${Math.round(json.length / 1024)} KB, ~${Math.round(chars / 3.6 / 1000)}k tokens`);
}
