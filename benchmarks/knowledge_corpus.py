"""The knowledge benchmark's help center: 500+ Markdown articles for the demo shop, generated deterministically.

    python -m benchmarks.knowledge_corpus   # rewrites benchmarks/data/knowledge/ (articles, manifest, questions)

The output is committed, so the labelled set stays fixed; regenerating it must give the same bytes. The families:

- the demo shop's own help articles (``app.demo_shop.demo_help_documents``), the current policies;
- their 2024 versions with other numbers (a 14-day return window...), marked archived, each naming its successor;
- per product: a guide with a specification table, care steps, an FAQ list, troubleshooting with one heading per
  problem, and a warranty-and-returns page (near-duplicates of each other across products), plus 2024 editions of
  half the guides with older prices;
- delivery pages per city (near-duplicates that differ in warehouse, days and ZIP prefix), short how-tos, category
  and topic FAQs, size charts and rate tables;
- German and Chinese translations of the key policies, and per product a guide and a warranty page in each.

``manifest.json`` lists every article with its language, family and status (``current`` or ``archived``, with
the current version it was replaced by); ``questions.json`` (``benchmarks.knowledge_questions``) labels questions
with the current articles that answer them.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path

from app.demo_shop.catalog import CITIES, PRODUCTS, CatalogProduct
from benchmarks.knowledge_policies import ARCHIVED_2024, HOW_TOS, TRANSLATIONS, city_slug, demo_articles, section_of
from benchmarks.knowledge_products import (
    CATEGORIES,
    HYGIENE_SKUS,
    ProductFacts,
    product_facts,
    warranty_years,
)
from benchmarks.knowledge_questions import write_questions

DATA_DIR = Path(__file__).parent / "data" / "knowledge"
ARTICLES_DIR = DATA_DIR / "articles"
MANIFEST = DATA_DIR / "manifest.json"
SEED = 20261202
CORPUS_DATE = date(2026, 11, 30)  # the newest "Updated" line; older ones are drawn before it
ARCHIVED_EDITIONS = 20  # products whose 2024 guide is kept, with the older price
# Which warehouse (``app.demo_shop.catalog.WAREHOUSES``) serves each state, and the standard shipping days from it:
# within 3-5 business days, as "Shipping times and costs" says.
WAREHOUSE_BY_REGION = {
    "OR": ("Reno, NV", 3), "WA": ("Reno, NV", 4), "CA": ("Reno, NV", 3), "CO": ("Reno, NV", 4),
    "AZ": ("Reno, NV", 4), "UT": ("Reno, NV", 3), "ID": ("Reno, NV", 4), "TX": ("Columbus, OH", 5),
    "IL": ("Columbus, OH", 3), "MN": ("Columbus, OH", 4), "WI": ("Columbus, OH", 4), "OH": ("Columbus, OH", 3),
    "GA": ("Columbus, OH", 4), "TN": ("Columbus, OH", 3), "NC": ("Allentown, PA", 4), "MA": ("Allentown, PA", 3),
    "NY": ("Allentown, PA", 3), "PA": ("Allentown, PA", 3), "MD": ("Allentown, PA", 3), "FL": ("Allentown, PA", 5),
    "VT": ("Allentown, PA", 4),
}  # fmt: skip
DE_LABELS = {"price": "Preis", "material": "Material", "size": "Größe", "weight": "Gewicht", "colors": "Farben",
             "warranty": "Garantie", "years": "Jahr(e)"}  # fmt: skip
ZH_LABELS = {"price": "价格", "material": "材质", "size": "尺寸", "weight": "重量", "colors": "颜色",
             "warranty": "保修", "years": "年"}  # fmt: skip


@dataclass(frozen=True)
class Article:
    id: str  # the path under articles/ without ".md"
    title: str
    language: str
    family: str
    status: str = "current"
    replaced_by: str | None = None
    translates: str | None = None
    sku: str | None = None
    body: str = ""

    def markdown(self, updated: date) -> str:
        return f"# {self.title}\n\nUpdated {updated.isoformat()}\n\n{self.body.strip()}\n"


def money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def returnable_sentence(sku: str) -> str:
    if sku in HYGIENE_SKUS:
        return (
            "For hygiene reasons it can't be returned once opened or used, unless it is damaged or defective. "
            "Unopened, it follows the 30-day return policy."
        )
    return "It can be returned within 30 days of delivery, unused and in its original packaging."


# -- the demo shop's articles and their 2024 versions -------------------------------------------------------------
def policy_articles() -> Iterator[Article]:
    articles = demo_articles()
    seeds = {seed.slug: seed for seed in articles}
    for seed in articles:
        yield Article(f"{section_of(seed.slug)}/{seed.slug}", seed.title, "en", "policy", body=seed.body)
    for archived in ARCHIVED_2024:
        seed = seeds[archived.slug]
        body = seed.body
        for current, then in archived.changes:
            if current not in body:
                raise ValueError(f"{archived.slug}: {current!r} is not in the current article")
            body = body.replace(current, then)
        current_id = f"{section_of(seed.slug)}/{seed.slug}"
        banner = (
            f"> **Archived 2024.** This version applied to orders placed in 2024 and is no longer in effect. "
            f'The current version is "{seed.title}" ({current_id}).'
        )
        yield Article(
            f"archived/{seed.slug}-2024",
            f"{seed.title} (archived 2024)",
            "en",
            "archived",
            status="archived",
            replaced_by=current_id,
            body=f"{banner}\n\n{body}",
        )


# -- products -------------------------------------------------------------------------------------------------------
def spec_rows(product: CatalogProduct, facts: ProductFacts, labels: dict[str, str], price_cents: int) -> str:
    years = warranty_years(product.sku)
    rows = [(labels["price"], money(price_cents)), (labels["material"], facts.material), (labels["size"], facts.size),
            (labels["weight"], facts.weight), (labels["colors"], ", ".join(facts.colors)),
            (labels["warranty"], f"{years} {labels['years']}")]  # fmt: skip
    return "\n".join(["| | |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)])


def guide_body(product: CatalogProduct, facts: ProductFacts, price_cents: int) -> str:
    category = CATEGORIES[product.sku[:2]][0]
    dishwasher = ""
    if facts.dishwasher_safe is not None:
        dishwasher = f"\n\nDishwasher safe: {'yes' if facts.dishwasher_safe else 'no, wash it by hand'}."
    return (
        f"SKU {product.sku} · {category}\n\n## Specifications\n\n{spec_rows(product, facts, EN_LABELS, price_cents)}"
        f"{dishwasher}\n\n## Returns and warranty\n\n{returnable_sentence(product.sku)} Manufacturing defects are "
        f"covered for {warranty_years(product.sku)} year(s) from delivery."
    )


EN_LABELS = {"price": "Price", "material": "Material", "size": "Size", "weight": "Weight", "colors": "Colors",
             "warranty": "Warranty", "years": "year(s)"}  # fmt: skip


def care_body(facts: ProductFacts) -> str:
    steps = "\n".join(f"{number}. {step}" for number, step in enumerate(facts.care, start=1))
    return f"Follow these steps to keep your {facts.alias} in good shape for years.\n\n{steps}"


def faq_body(product: CatalogProduct, facts: ProductFacts) -> str:
    pairs = [
        ("What colors can I choose from?", ", ".join(facts.colors).capitalize() + "."),
        ("How long is it covered?", f"{warranty_years(product.sku)} year(s) against manufacturing defects."),
        ("Can I send it back if I change my mind?", returnable_sentence(product.sku)),
        ("What is it made of?", facts.material.capitalize() + "."),
    ]
    if facts.dishwasher_safe is not None:
        pairs.append(("Can it go in the dishwasher?", "Yes." if facts.dishwasher_safe else "No, wash it by hand."))
    problem, fix = facts.problems[0]
    pairs.append((f"{problem}: what now?", fix))
    return "\n\n".join(f"**{question}**\n{answer}" for question, answer in pairs)


def troubleshooting_body(facts: ProductFacts) -> str:
    sections = [f"## {problem}\n\n{fix}" for problem, fix in facts.problems]
    closing = "## Still not working?\n\nContact us with your order number and a photo or short video of the problem."
    return "\n\n".join([*sections, closing])


def warranty_body(product: CatalogProduct) -> str:
    years = warranty_years(product.sku)
    return (
        f"## Warranty\n\nThe {product.name} is covered for {years} year(s) from delivery against defects in "
        f"materials and workmanship. Normal wear, accidents and misuse are not covered.\n\n## Returns\n\n"
        f"{returnable_sentence(product.sku)}"
    )


def product_articles() -> Iterator[Article]:
    for index, (product, facts) in enumerate(product_facts()):
        sku, name, folder = product.sku, product.name, f"products/{product.sku.lower()}"
        yield Article(
            f"{folder}/guide",
            f"{name}: product guide",
            "en",
            "product_guide",
            sku=sku,
            body=guide_body(product, facts, product.price_cents),
        )
        yield Article(f"{folder}/care", f"Caring for your {name}", "en", "care", sku=sku, body=care_body(facts))
        yield Article(
            f"{folder}/faq", f"{name}: questions and answers", "en", "faq", sku=sku, body=faq_body(product, facts)
        )
        yield Article(
            f"{folder}/troubleshooting",
            f"Troubleshooting: {name}",
            "en",
            "troubleshooting",
            sku=sku,
            body=troubleshooting_body(facts),
        )
        yield Article(
            f"{folder}/warranty",
            f"{name}: warranty and returns",
            "en",
            "warranty_returns",
            sku=sku,
            body=warranty_body(product),
        )
        if index % 2 == 0 and index // 2 < ARCHIVED_EDITIONS:
            old_price = product.price_cents - 500 if product.price_cents > 2000 else product.price_cents - 200
            banner = (
                f'> **Archived 2024 edition.** Prices and details changed; the current page is "{name}: '
                f'product guide" ({folder}/guide).'
            )
            yield Article(
                f"archived/{sku.lower()}-guide-2024",
                f"{name}: product guide (2024 edition)",
                "en",
                "archived",
                status="archived",
                replaced_by=f"{folder}/guide",
                sku=sku,
                body=f"{banner}\n\n{guide_body(product, facts, old_price)}",
            )


def translated_product_articles() -> Iterator[Article]:
    for product, facts in product_facts():
        sku, name, folder = product.sku, product.name, product.sku.lower()
        years = warranty_years(sku)
        hygiene = sku in HYGIENE_SKUS
        de_return = (
            "Aus Hygienegründen nach dem Öffnen nicht rückgabefähig, außer bei Defekt."
            if hygiene
            else "Rückgabe innerhalb von 30 Tagen nach Zustellung, unbenutzt und originalverpackt."
        )
        zh_return = (
            "出于卫生原因，拆封后不能退货（商品有缺陷除外）。"
            if hygiene
            else "签收后 30 天内可退货，须未使用并保留原包装。"
        )
        yield Article(
            f"de/products/{folder}-guide",
            f"{name}: Produktinformationen",
            "de",
            "product_guide",
            translates=f"products/{folder}/guide",
            sku=sku,
            body=f"Artikelnummer {sku}\n\n## Technische Daten\n\n"
            f"{spec_rows(product, facts, DE_LABELS, product.price_cents)}\n\n## Rückgabe\n\n{de_return}",
        )
        yield Article(
            f"de/products/{folder}-warranty",
            f"{name}: Garantie und Rückgabe",
            "de",
            "warranty_returns",
            translates=f"products/{folder}/warranty",
            sku=sku,
            body=f"## Garantie\n\n{years} {DE_LABELS['years']} Garantie auf Material- und "
            f"Verarbeitungsfehler ab Zustellung.\n\n## Rückgabe\n\n{de_return}",
        )
        yield Article(
            f"zh/products/{folder}-guide",
            f"{name}：产品说明",
            "zh",
            "product_guide",
            translates=f"products/{folder}/guide",
            sku=sku,
            body=f"商品编号 {sku}\n\n## 规格\n\n{spec_rows(product, facts, ZH_LABELS, product.price_cents)}"
            f"\n\n## 退货\n\n{zh_return}",
        )
        yield Article(
            f"zh/products/{folder}-warranty",
            f"{name}：保修与退货",
            "zh",
            "warranty_returns",
            translates=f"products/{folder}/warranty",
            sku=sku,
            body=f"## 保修\n\n自签收之日起，材料和工艺缺陷保修 {years} 年。\n\n## 退货\n\n{zh_return}",
        )


# -- delivery, how-tos, FAQs, tables, translations -----------------------------------------------------------------
def delivery_articles() -> Iterator[Article]:
    for city in CITIES:
        warehouse, days = WAREHOUSE_BY_REGION[city.region]
        body = (
            f"Orders to {city.name}, {city.region} (ZIP codes starting {city.postal_prefix}) ship from our "
            f"{warehouse} warehouse.\n\n## Standard shipping\n\nUsually {days} business days after dispatch; "
            f"free on orders of $50 or more, $5.99 below.\n\n## Express shipping\n\n1-2 business days after "
            f"dispatch for $14.99 when ordered before 1 pm Eastern.\n\n## Holidays\n\nFrom mid-November to the "
            f"end of December allow 1-3 extra days."
        )
        yield Article(
            f"delivery/{city_slug(city.name)}", f"Delivery to {city.name}, {city.region}", "en", "delivery", body=body
        )


def how_to_articles() -> Iterator[Article]:
    for how_to in HOW_TOS:
        steps = "\n".join(f"{number}. {step}" for number, step in enumerate(how_to.steps, start=1))
        yield Article(f"how-to/{how_to.slug}", how_to.title, "en", "how_to", body=f"{steps}\n\n{how_to.note}")


def category_faq_articles() -> Iterator[Article]:
    for prefix, (category, slug) in CATEGORIES.items():
        items = [(product, facts) for product, facts in product_facts() if product.sku.startswith(prefix)]
        lines = [f"**How long are {category.lower()} products covered?**",
                 "; ".join(f"{p.name}: {warranty_years(p.sku)} year(s)" for p, _ in items) + "."]  # fmt: skip
        lines += ["**What does each item weigh?**", "; ".join(f"{p.name}: {f.weight}" for p, f in items) + "."]
        hygiene = [p.name for p, _ in items if p.sku in HYGIENE_SKUS]
        lines += ["**Can everything be returned?**", (f"Not once opened: {', '.join(hygiene)} (hygiene)." if hygiene
                  else "Yes, within 30 days of delivery, unused and in the original packaging.")]  # fmt: skip
        yield Article(f"faq/{slug}", f"{category}: frequently asked questions", "en", "faq", body="\n\n".join(lines))


def table_articles() -> Iterator[Article]:
    rows = "\n".join(f"| {CATEGORIES[p.sku[:2]][0]} | {p.name} | {warranty_years(p.sku)} year(s) |" for p in PRODUCTS)
    yield Article(
        "tables/warranty-by-product",
        "Warranty period of every product",
        "en",
        "table",
        body=f"| Category | Product | Warranty |\n|---|---|---|\n{rows}",
    )
    yield Article(
        "tables/shipping-rates",
        "Shipping rates at a glance",
        "en",
        "table",
        body=(
            "| Service | Days after dispatch | Cost |\n|---|---|---|\n| Standard, order under $50 | 3-5 | $5.99 |\n"
            "| Standard, order of $50 or more | 3-5 | free |\n| Express (order before 1 pm Eastern) | 1-2 | $14.99 |\n"
            "| USPS to P.O. box | 4-8 | as standard |\n| APO/FPO/DPO | 7-21 | as standard |"
        ),
    )
    sizes = (("AP-5001", "| Size | US women's | US men's |\n|---|---|---|\n| S | 5-7 | 4-6 |\n| M | 7.5-9.5 | 6.5-8.5 |"
              "\n| L | 10-12 | 9-11.5 |\n| XL | - | 12-14 |"),
             ("AP-5002", "| Size | Chest | Sleeve |\n|---|---|---|\n| XS | 34 in | 32 in |\n| S | 36 in | 33 in |\n"
              "| M | 39 in | 34 in |\n| L | 42 in | 35 in |\n| XL | 45 in | 36 in |\n| XXL | 48 in | 37 in |"),
             ("AP-5003", "| Size | Chest | Length |\n|---|---|---|\n| XS | 36 in | 26 in |\n| S | 38 in | 27 in |\n"
              "| M | 41 in | 28 in |\n| L | 44 in | 29 in |\n| XL | 47 in | 30 in |\n| XXL | 50 in | 31 in |"),
             ("AP-5005", "| Belt size | Fits waist |\n|---|---|\n| 30 | 28-32 in |\n| 34 | 32-36 in |\n| 38 | 36-40 in"
              " |\n| 42 | 40-44 in |\n| 44 | 42-46 in |"))  # fmt: skip
    names = {product.sku: product.name for product in PRODUCTS}
    for sku, table in sizes:
        yield Article(
            f"tables/size-chart-{sku.lower()}",
            f"Size chart: {names[sku]}",
            "en",
            "size_chart",
            sku=sku,
            body=f"Measure over light clothing; between two sizes, take the larger.\n\n{table}",
        )


def translation_articles() -> Iterator[Article]:
    for translation in TRANSLATIONS:
        original = f"{section_of(translation.slug)}/{translation.slug}"
        yield Article(
            f"{translation.language}/{translation.slug}",
            translation.title,
            translation.language,
            "translation",
            translates=original,
            body=translation.body,
        )


def all_articles() -> list[Article]:
    families = (policy_articles, product_articles, translated_product_articles, delivery_articles,
                how_to_articles, category_faq_articles, table_articles, translation_articles)  # fmt: skip
    articles = [article for family in families for article in family()]
    ids = [article.id for article in articles]
    if len(ids) != len(set(ids)):
        raise ValueError("two articles share an id")
    return articles


def write_corpus(directory: Path = DATA_DIR) -> list[Article]:
    """Writes the articles and the manifest (and leaves nothing of an earlier run behind)."""
    articles = all_articles()
    rng = random.Random(SEED)
    target = directory / "articles"
    for stale in sorted(target.rglob("*.md")) if target.exists() else []:
        stale.unlink()
    manifest = []
    for article in articles:
        updated = CORPUS_DATE - timedelta(days=rng.randrange(0, 300))
        if article.status == "archived":
            updated = date(2024, 1, 1) + timedelta(days=rng.randrange(0, 360))
        path = target / f"{article.id}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(article.markdown(updated), encoding="utf-8")
        entry = {key: value for key, value in asdict(article).items() if key != "body" and value is not None}
        manifest.append(entry | {"updated": updated.isoformat()})
    (directory / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", "utf-8")
    current = {article.id for article in articles if article.status == "current"}
    write_questions(current, directory / "questions.json")
    return articles


if __name__ == "__main__":
    written = write_corpus()
    print(f"{len(written)} articles in {ARTICLES_DIR}")
