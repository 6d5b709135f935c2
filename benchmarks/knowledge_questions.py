"""The knowledge benchmark's questions, each labelled with the current articles that answer it (none for a question
the help center cannot answer).

Kinds: ``paraphrase`` (written as a customer would ask, not in the article's words), ``misspelled`` (a paraphrase
with typos: swapped, dropped or doubled letters, drawn from a seeded generator), ``no_answer`` (nothing in the
corpus answers it; a good search finds nothing confident). Languages: English, German, Chinese. A German or Chinese
question is answered by its translation and by the English original; an archived page never answers.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.demo_shop.catalog import CITIES
from benchmarks.knowledge_policies import city_slug, section_of
from benchmarks.knowledge_products import CATEGORIES, HYGIENE_SKUS, product_facts

SEED = 7
MISSPELLED_SHARE = 0.3  # of the English paraphrases, a misspelled copy is added
RET, ORD, ACC = "returns/", "orders/", "account/"

POLICY_QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("How many days do I have to send something back?", (f"{RET}return-policy",)),
    ("Is there a fee if I return a jacket because it doesn't fit?", (f"{RET}return-policy", f"{RET}refund-amounts")),
    ("what do I do to send back an item, step by step", (f"{RET}how-to-return-an-item",)),
    (
        "I don't have a printer, can I still return my order?",
        (f"{RET}how-to-return-an-item", "how-to/return-without-printer"),
    ),
    ("How long until the money shows up on my credit card after a return?", (f"{RET}refund-timing",)),
    ("refund to paypal how many days", (f"{RET}refund-timing",)),
    ("Will you refund the shipping I paid originally?", (f"{RET}refund-amounts", f"{RET}return-policy")),
    ("I used a discount code, how much do I get back if I return it?", (f"{RET}refund-amounts",)),
    (
        "The mug came cracked in the box, what now?",
        (f"{RET}damaged-item", "products/kt-1006/troubleshooting", "products/kt-1006/faq"),
    ),
    ("The parcel was missing one of the things I ordered", (f"{RET}wrong-or-missing-item", f"{ORD}split-shipments")),
    ("You sent me a completely different product", (f"{RET}wrong-or-missing-item",)),
    ("Can I swap my fleece for a bigger size?", (f"{RET}exchanges",)),
    ("do exchanges cost the return shipping fee", (f"{RET}exchanges",)),
    ("What isn't covered by your guarantee?", (f"{RET}product-warranty",)),
    (
        "My headphones broke after 8 months, how do I get them fixed?",
        (f"{RET}warranty-claim", f"{RET}product-warranty"),
    ),
    ("How fast do you answer a warranty request?", (f"{RET}warranty-claim",)),
    (
        "I got a Christmas present I don't like, until when can it go back?",
        (f"{RET}holiday-returns", "how-to/gift-receipt-return"),
    ),
    (
        "Can opened earbuds be returned?",
        (f"{RET}non-returnable-items", "products/el-3001/warranty", "products/el-3001/guide", "products/el-3001/faq"),
    ),
    ("Are final sale items refundable?", (f"{RET}non-returnable-items",)),
    ("The price went down a week after I bought it, can I get the difference?", (f"{RET}price-adjustment",)),
    ("do you match amazon prices", (f"{RET}price-adjustment",)),
    ("What happens if I refuse the package at the door?", (f"{RET}refusing-a-delivery", f"{ORD}cancel-an-order")),
    ("What does 'processing' mean on my order?", (f"{ORD}order-status-explained",)),
    ("My UPS number starts with 1Z, where can I follow it?", (f"{ORD}track-your-order",)),
    ("Tracking hasn't moved since the label was made", (f"{ORD}track-your-order",)),
    ("What's the minimum order for free delivery?", (f"{ORD}shipping-times-and-costs", "tables/shipping-rates")),
    ("How much is overnight or express shipping?", (f"{ORD}shipping-times-and-costs", "tables/shipping-rates")),
    ("Can I stop an order I placed an hour ago?", (f"{ORD}cancel-an-order", "how-to/cancel-pending-order")),
    ("I typed the wrong street, can you fix the delivery address?", (f"{ORD}change-shipping-address",)),
    ("Can I add another item to the order I already placed?", (f"{ORD}modify-items-in-order",)),
    ("Tracking says delivered but there's nothing at my door", (f"{ORD}delivered-but-not-received",)),
    ("What does exception mean in my tracking?", (f"{ORD}delivery-exception",)),
    ("Why did I get two boxes on different days?", (f"{ORD}split-shipments",)),
    ("Do you deliver to Canada?", (f"{ORD}international-shipping",)),
    ("Can you ship to my PO box?", (f"{ORD}po-box-and-military-addresses", "tables/shipping-rates")),
    ("I'm deployed, do you ship to APO addresses?", (f"{ORD}po-box-and-military-addresses", "tables/shipping-rates")),
    (
        "When will the sold-out tent be available again?",
        (f"{ORD}out-of-stock-and-backorders", "how-to/notify-me-when-back"),
    ),
    ("Why does the courier want a signature?", (f"{ORD}signature-required-deliveries",)),
    ("Last day to order so it arrives before Christmas?", (f"{ORD}holiday-shipping",)),
    ("Can I pay with Apple Pay?", (f"{ACC}payment-methods",)),
    ("do you take cash on delivery", (f"{ACC}payment-methods",)),
    ("My card keeps getting rejected at checkout", (f"{ACC}payment-declined",)),
    ("I was billed twice for the same order", (f"{ACC}charged-twice",)),
    ("Do gift cards expire?", (f"{ACC}gift-cards",)),
    ("Can I use two coupon codes on one order?", (f"{ACC}promo-codes", "how-to/apply-promo-code")),
    ("Why was tax added to my order?", (f"{ACC}sales-tax",)),
    ("We are a nonprofit, can we buy without sales tax?", (f"{ACC}sales-tax", "how-to/tax-exempt-certificate")),
    (
        "I need a receipt for my company",
        (f"{ACC}invoices-and-receipts", "how-to/company-name-on-invoice", "how-to/download-invoice-pdf"),
    ),
    ("Do I have to register to buy something?", (f"{ACC}account-and-guest-checkout",)),
    ("I forgot my login password", (f"{ACC}reset-password",)),
    ("How long is the password reset email valid?", (f"{ACC}reset-password",)),
    ("How do I change the phone number on my profile?", (f"{ACC}update-account-details",)),
    ("Please erase all my personal information", (f"{ACC}delete-account-and-data",)),
    ("How do I stop getting text messages from you?", (f"{ACC}notification-preferences",)),
    (
        "I got an email asking me to pay a customs fee, is it you?",
        (f"{ACC}phishing-and-scams", "how-to/report-phishing"),
    ),
    ("What hours is your support team available?", (f"{ACC}contact-support", "how-to/talk-to-a-person")),
    ("Can I talk to a real human?", (f"{ACC}contact-support", "how-to/talk-to-a-person")),
    ("Where do I get the invoice PDF of an old order?", ("how-to/download-invoice-pdf", f"{ACC}invoices-and-receipts")),
    (
        "How do I add a second delivery address to my account?",
        ("how-to/save-a-new-address", f"{ACC}update-account-details"),
    ),
    ("How much is left on my gift card?", ("how-to/check-gift-card-balance", f"{ACC}gift-cards")),
    (
        "The parcel already left, can it be sent somewhere else?",
        ("how-to/redirect-ups-parcel", f"{ORD}change-shipping-address"),
    ),
    (
        "I ordered as a guest, will my orders show in a new account?",
        ("how-to/link-guest-orders", f"{ACC}account-and-guest-checkout"),
    ),
    ("I think someone saw my password, how do I log out of all devices?", ("how-to/sign-out-everywhere",)),
    (
        "My bank can't find the refund, what should I give them?",
        ("how-to/refund-reference-for-bank", f"{RET}refund-timing"),
    ),
    (
        "Can I pay partly with a gift card and partly with my Visa?",
        ("how-to/pay-with-two-methods", f"{ACC}payment-methods", f"{ACC}gift-cards"),
    ),
    (
        "Can UPS keep my package at a store for me to collect?",
        ("how-to/hold-at-pickup-location", f"{ORD}signature-required-deliveries"),
    ),
    ("How do I send tracking to my wife?", ("how-to/share-tracking-link",)),
    ("I want a copy of all the data you have about me", ("how-to/request-data-copy", f"{ACC}delete-account-and-data")),
    ("Which size rain jacket for a 42 inch chest?", ("tables/size-chart-ap-5002",)),
    (
        "What belt size should I order for a 36 inch waist?",
        ("tables/size-chart-ap-5005", "products/ap-5005/troubleshooting"),
    ),
    ("Which sock size for men's shoe size 10?", ("tables/size-chart-ap-5001",)),
)

DE_POLICY_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("Wie lange habe ich Zeit, etwas zurückzuschicken?", "return-policy"),
    ("Kostet die Rücksendung etwas, wenn mir der Artikel nicht gefällt?", "return-policy"),
    ("Wann ist das Geld nach der Rücksendung auf meinem Konto?", "refund-timing"),
    ("Wie viel kostet der Versand und ab wann ist er gratis?", "shipping-times-and-costs"),
    ("Kann ich meine Bestellung noch abbrechen?", "cancel-an-order"),
    ("Ich habe mich bei der Adresse vertippt, kann man das ändern?", "change-shipping-address"),
    ("Kann ich mit PayPal bezahlen?", "payment-methods"),
    ("Laufen Gutscheinkarten irgendwann ab?", "gift-cards"),
    ("Wie lange Garantie gibt es auf Elektronik?", "product-warranty"),
    ("Ich habe mein Passwort vergessen", "reset-password"),
    ("Wann ist der Kundenservice erreichbar?", "contact-support"),
    ("Darf ich geöffnete Kopfhörer zurückgeben?", "non-returnable-items"),
    ("Das Paket kam kaputt an, was tun?", "damaged-item"),
    ("Wie lange dauert eine Erstatung auf die Kreditkarte?", "refund-timing"),
    ("Gibt es Expressversand und was kostet er?", "shipping-times-and-costs"),
)
ZH_POLICY_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("买的东西多少天内可以退？", "return-policy"),
    ("不喜欢想退货，要付运费吗？", "return-policy"),
    ("退货以后钱多久能退回信用卡？", "refund-timing"),
    ("运费多少？满多少包邮？", "shipping-times-and-costs"),
    ("刚下的单还能取消吗？", "cancel-an-order"),
    ("地址写错了，能改吗？", "change-shipping-address"),
    ("可以用 Apple Pay 付款吗？", "payment-methods"),
    ("礼品卡有有效期吗？", "gift-cards"),
    ("电子产品保修几年？", "product-warranty"),
    ("忘记登录密码怎么办？", "reset-password"),
    ("人工客服几点上班？", "contact-support"),
    ("耳机拆开了还能退吗？", "non-returnable-items"),
    ("收到的东西坏了怎么办？", "damaged-item"),
    ("加急快递要几天？", "shipping-times-and-costs"),
    ("退款到 PayPal 要多久？", "refund-timing"),
)

NO_ANSWER: tuple[tuple[str, str], ...] = (
    ("en", "Do you sell replacement tires for bicycles?"),
    ("en", "Do you have a referral program that gives me credit for inviting friends?"),
    ("en", "Do you have a physical store in Chicago I can visit?"),
    ("en", "Can you engrave my name on the knife?"),
    ("en", "Is there a student discount?"),
    ("en", "Do you offer a loyalty points program?"),
    ("en", "Can I rent a tent for a weekend instead of buying it?"),
    ("en", "Are you hiring warehouse staff?"),
    ("en", "What's the Wi-Fi password in your showroom?"),
    ("en", "Do you sell refurbished laptops?"),
    ("en", "Can I buy in bulk for my restaurant at wholesale prices?"),
    ("en", "Do you offer gift wrapping?"),
    ("en", "Is there an app for Apple Watch?"),
    ("en", "Can I schedule a video call with a product expert?"),
    ("en", "Do you plant a tree for every order?"),
    ("en", "Who is your CEO?"),
    ("en", "Can I become an affiliate and earn commission?"),
    ("en", "Do you ship live plants or seeds?"),
    ("en", "Is the skillet compatible with my Tesla?"),
    ("en", "What is your stock ticker symbol?"),
    ("en", "Can I book a technician to set things up at my home?"),
    ("en", "Do you have a printed paper catalogue I can order?"),
    ("en", "Do you sell pet food?"),
    ("en", "Can I order by fax?"),
    ("en", "Do you run cooking classes?"),
    ("en", "Is there a subscription box?"),
    ("en", "Do you organise corporate team-building events?"),
    ("en", "Can you recommend a good camping spot in Utah?"),
    ("en", "How do I become a franchise owner?"),
    ("en", "Do you donate to schools?"),
    ("en", "whats the weather like in seattle tomorrow"),
    ("en", "Can I trade in my old headphones for credit?"),
    ("de", "Gibt es einen Studentenrabatt?"),
    ("de", "Kann ich bei euch einen Kochkurs buchen?"),
    ("de", "Habt ihr ein Ladengeschäft in Berlin?"),
    ("de", "Verkauft ihr gebrauchte Ware?"),
    ("de", "Bietet ihr Geschenkverpackung an?"),
    ("de", "Verkauft ihr auch Fahrräder?"),
    ("de", "Gibt es ein Treueprogramm mit Punkten?"),
    ("de", "Kann ich ein Zelt mieten?"),
    ("zh", "有学生折扣吗？"),
    ("zh", "你们招聘仓库员工吗？"),
    ("zh", "你们在上海有实体店吗？"),
    ("zh", "可以预约上门安装吗？"),
    ("zh", "提供礼品包装吗？"),
    ("zh", "你们卖宠物食品吗？"),
    ("zh", "有会员积分吗？"),
)

EN_PRODUCT_TEMPLATES: dict[str, tuple[str, ...]] = {
    "price": ("how much does the {alias} cost?", "what's the price of your {alias}", "{alias} price?"),
    "weight": ("how heavy is the {alias}", "what does the {alias} weigh?"),
    "colors": ("which colours does the {alias} come in?", "is the {alias} available in other colors"),
    "material": ("what is the {alias} made of?", "what material is the {alias}"),
    "care": ("how do I clean and look after the {alias}?", "best way to take care of my {alias}"),
    "dishwasher": ("can I put the {alias} in the dishwasher?", "is the {alias} ok in a dishwasher"),
    "problem": ("my {alias}: {problem}. what should I do?", "{problem} on my {alias}, help"),
    "warranty": ("how many years of warranty on the {alias}?", "how long is the {alias} guaranteed for"),
    "returnable": (
        "I opened the {alias}, can I still send it back?",
        "changed my mind about the {alias}, can I return it?",
    ),
}
DE_PRODUCT_TEMPLATES = {"price": "Was kostet {name}?", "warranty": "Wie lange gilt die Garantie für {name}?",
                        "returnable": "Kann ich {name} nach dem Öffnen zurückgeben?"}  # fmt: skip
ZH_PRODUCT_TEMPLATES = {
    "price": "{name}多少钱？",
    "warranty": "{name}保修多久？",
    "returnable": "{name}拆封后可以退吗？",
}


def product_answers(fact: str, sku: str, *, language: str = "en") -> list[str]:
    folder = f"products/{sku.lower()}"
    category_faq = f"faq/{CATEGORIES[sku[:2]][1]}"
    answers = {
        "price": [f"{folder}/guide"],
        "weight": [f"{folder}/guide", category_faq],
        "colors": [f"{folder}/guide", f"{folder}/faq"],
        "material": [f"{folder}/guide", f"{folder}/faq"],
        "care": [f"{folder}/care"],
        "dishwasher": [f"{folder}/care", f"{folder}/guide", f"{folder}/faq"],
        "problem": [f"{folder}/troubleshooting", f"{folder}/faq"],
        "warranty": [
            f"{folder}/guide",
            f"{folder}/faq",
            f"{folder}/warranty",
            "tables/warranty-by-product",
            f"{RET}product-warranty",
            category_faq,
        ],
        "returnable": [f"{folder}/guide", f"{folder}/faq", f"{folder}/warranty", f"{RET}return-policy"]
        + ([f"{RET}non-returnable-items", category_faq] if sku in HYGIENE_SKUS else []),
    }[fact]
    if language != "en":
        short = sku.lower()
        answers += [f"{language}/products/{short}-guide", f"{language}/products/{short}-warranty"]
        answers += {"warranty": [f"{language}/product-warranty"], "returnable": [f"{language}/return-policy"]}.get(
            fact, []
        )
    return answers


def misspell(text: str, rng: random.Random) -> str:
    """Two typos in words of four letters or more: a swap, a dropped or a doubled letter."""
    words = text.split(" ")
    candidates = [index for index, word in enumerate(words) if len(word) >= 4 and word.isalpha()]
    for index in rng.sample(candidates, min(2, len(candidates))):
        word, at = words[index], rng.randrange(1, len(words[index]) - 2)
        kind = rng.choice(("swap", "drop", "double"))
        if kind == "swap":
            word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        elif kind == "drop":
            word = word[:at] + word[at + 1 :]
        else:
            word = word[:at] + word[at] + word[at:]
        words[index] = word
    return " ".join(words)


def product_questions(rng: random.Random) -> Iterator[dict[str, Any]]:
    facts_in_turn = ("price", "care", "warranty", "problem", "colors", "returnable", "weight", "material")
    for index, (product, facts) in enumerate(product_facts()):
        chosen = [facts_in_turn[index % len(facts_in_turn)], facts_in_turn[(index + 3) % len(facts_in_turn)]]
        if facts.dishwasher_safe is not None:
            chosen.append("dishwasher")
        for fact in chosen:
            problem = facts.problems[index % len(facts.problems)][0].lower()
            text = rng.choice(EN_PRODUCT_TEMPLATES[fact]).format(alias=facts.alias, problem=problem)
            answers = product_answers(fact, product.sku)
            if fact == "problem" and problem != facts.problems[0][0].lower():
                answers = [f"products/{product.sku.lower()}/troubleshooting"]
            yield {"text": text, "language": "en", "kind": "paraphrase", "answers": answers}
        short = product.name.split(",")[0].split(" (")[0]
        for language, templates in (("de", DE_PRODUCT_TEMPLATES), ("zh", ZH_PRODUCT_TEMPLATES)):
            fact = ("price", "warranty", "returnable")[(index + (language == "zh")) % 3]
            yield {
                "text": templates[fact].format(name=short),
                "language": language,
                "kind": "paraphrase",
                "answers": product_answers(fact, product.sku, language=language),
            }


def delivery_questions() -> Iterator[dict[str, Any]]:
    phrasings = ("How many days does standard delivery take to {city}?", "shipping time to {city} {region}?",
                 "Which warehouse ships to {city}, and how long does it take?")  # fmt: skip
    for index, city in enumerate(CITIES):
        text = phrasings[index % len(phrasings)].format(city=city.name, region=city.region)
        yield {"text": text, "language": "en", "kind": "paraphrase", "answers": [f"delivery/{city_slug(city.name)}"]}


def all_questions(current_articles: set[str]) -> list[dict[str, Any]]:
    rng = random.Random(SEED)
    english: list[dict[str, Any]] = [
        {"text": text, "language": "en", "kind": "paraphrase", "answers": list(answers)}
        for text, answers in POLICY_QUESTIONS
    ]
    english += delivery_questions()
    translated: list[dict[str, Any]] = []
    for language, questions in (("de", DE_POLICY_QUESTIONS), ("zh", ZH_POLICY_QUESTIONS)):
        for text, slug in questions:
            answers = [f"{language}/{slug}", f"{section_of(slug)}/{slug}"]
            translated.append({"text": text, "language": language, "kind": "paraphrase", "answers": answers})
    for question in product_questions(rng):
        (english if question["language"] == "en" else translated).append(question)
    misspelled = [
        question | {"text": misspell(question["text"], rng), "kind": "misspelled"}
        for question in english
        if rng.random() < MISSPELLED_SHARE
    ]
    no_answer = [
        {"text": text, "language": language, "kind": "no_answer", "answers": []} for language, text in NO_ANSWER
    ]
    questions = english + misspelled + translated + no_answer
    for number, question in enumerate(questions, start=1):
        question["id"] = f"q{number:03d}"
        unknown = set(question["answers"]) - current_articles
        if unknown:
            raise ValueError(f"{question['text']!r} is labelled with articles that are not current: {unknown}")
    return questions


def write_questions(current_articles: set[str], path: Path) -> None:
    questions = [{"id": q["id"], **{k: v for k, v in q.items() if k != "id"}} for q in all_questions(current_articles)]
    path.write_text(json.dumps(questions, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
