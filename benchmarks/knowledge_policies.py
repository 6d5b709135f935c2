"""The knowledge benchmark's hand-written pages beside the demo shop's own articles: the 2024 versions that the
current policies replaced, short how-tos, and German and Chinese translations of the key policies.

The shop sells to US addresses only ("Shipping outside the United States"); its German and Chinese pages are the help
center's translations for customers who read those languages, with the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.demo_shop import demo_help_documents

# The demo help center's articles by section of the benchmark's tree, in the order the corpus lists them.
ORDER_SLUGS = (
    "order-status-explained", "track-your-order", "shipping-times-and-costs", "cancel-an-order",
    "change-shipping-address", "modify-items-in-order", "delivered-but-not-received", "delivery-exception",
    "split-shipments", "international-shipping", "po-box-and-military-addresses", "out-of-stock-and-backorders",
    "signature-required-deliveries", "holiday-shipping",
)  # fmt: skip
RETURN_SLUGS = (
    "return-policy", "how-to-return-an-item", "refund-timing", "refund-amounts", "damaged-item",
    "wrong-or-missing-item", "exchanges", "product-warranty", "warranty-claim", "holiday-returns",
    "non-returnable-items", "price-adjustment", "refusing-a-delivery",
)  # fmt: skip
ACCOUNT_SLUGS = (
    "payment-methods", "payment-declined", "charged-twice", "gift-cards", "promo-codes", "sales-tax",
    "invoices-and-receipts", "account-and-guest-checkout", "reset-password", "update-account-details",
    "delete-account-and-data", "notification-preferences", "phishing-and-scams", "contact-support",
)  # fmt: skip


@dataclass(frozen=True)
class DemoArticle:
    """One of the demo shop's articles: its file name without ``.md``, its title, and the Markdown under the title."""

    slug: str
    title: str
    body: str


def demo_articles() -> list[DemoArticle]:
    """The demo help center's articles in section order; raises when the package's files and the sections differ."""
    by_slug: dict[str, DemoArticle] = {}
    for document in demo_help_documents():
        slug = document.locator.removesuffix(".md")
        body = document.markdown.removeprefix(f"# {document.title}\n\n").removesuffix("\n")
        by_slug[slug] = DemoArticle(slug, document.title, body)
    ordered = (*ORDER_SLUGS, *RETURN_SLUGS, *ACCOUNT_SLUGS)
    if set(ordered) != set(by_slug):
        raise ValueError(f"The demo articles and the benchmark's sections differ: {set(ordered) ^ set(by_slug)}")
    return [by_slug[slug] for slug in ordered]


@dataclass(frozen=True)
class ArchivedChange:
    """A current article as it read in 2024: each (current, then) pair is replaced in its body."""

    slug: str
    changes: tuple[tuple[str, str], ...]


# Older rules that contradict the current ones; a question is answered by the current article only.
ARCHIVED_2024: tuple[ArchivedChange, ...] = (
    ArchivedChange("return-policy", (("within **30 days of delivery**", "within **14 days of delivery**"),
                                     ("$6.95", "$4.95"), ("until January 31", "until January 15"))),
    ArchivedChange("refund-timing", (("5-10 business days", "7-14 business days"), ("3-5 business days",
                                                                                       "5-7 business days"))),
    ArchivedChange("shipping-times-and-costs", (("$50 or more; $5.99 below", "$35 or more; $4.99 below"),
                                                ("$14.99", "$19.99"), ("before 1 pm Eastern", "before noon Eastern"))),
    ArchivedChange("gift-cards", (("They never expire and have no fees.", "They expire 2 years after purchase."),
                                  ("from $10 to $500", "from $25 to $250"))),
    ArchivedChange("product-warranty", (("Electronics (earbuds, headphones, speakers, chargers, keyboards, "
                                         "trackers): 1 year", "Electronics (earbuds, headphones, speakers, "
                                         "chargers, keyboards, trackers): 6 months"),
                                        ("cast iron: 5 years", "cast iron: 3 years"))),
    ArchivedChange("price-adjustment", (("within 14 days of your purchase", "within 7 days of your purchase"),)),
    ArchivedChange("holiday-returns", (("**January 31**", "**January 15**"),)),
    ArchivedChange("reset-password", (("works for 60 minutes", "works for 24 hours"),
                                      ("at least 10 characters", "at least 8 characters"))),
    ArchivedChange("contact-support", (("Saturday 10 am - 4 pm", "no weekend hours"), ("8 am - 8 pm",
                                                                                        "9 am - 6 pm"))),
    ArchivedChange("signature-required-deliveries", (("Orders over $500", "Orders over $300"),)),
    ArchivedChange("payment-methods", (("PayPal, Apple Pay,\nGoogle Pay, and our own gift cards",
                                        "PayPal and our own\ngift cards"),)),
    ArchivedChange("holiday-shipping", (("order by December 15", "order by December 12"),
                                        ("order by December 20", "order by December 18"))),
    ArchivedChange("delete-account-and-data", (("within 30 days", "within 45 days"),)),
    ArchivedChange("damaged-item", (("within 30 days of delivery", "within 7 days of delivery"),)),
)  # fmt: skip


@dataclass(frozen=True)
class HowTo:
    slug: str
    title: str
    steps: tuple[str, ...]
    note: str


HOW_TOS: tuple[HowTo, ...] = (
    HowTo("download-invoice-pdf", "Download a PDF invoice", ("Sign in and open Orders.", "Select the order.",
          "Choose Download invoice (PDF)."), "Invoices for guest orders: ask support with the order number."),
    HowTo("save-a-new-address", "Save a new address to your account", ("Open Account settings › Addresses.",
          "Select Add address and fill in street, city, state and ZIP code.", "Tick Make default if you want it "
          "preselected at checkout."), "A saved address never changes orders already placed."),
    HowTo("add-mobile-for-sms", "Get shipping updates by text message", ("Open Account settings › Notifications.",
          "Add your mobile number and confirm the 6-digit code we text you.", "Switch on SMS shipping updates."),
          "Reply STOP to any text to switch them off again."),
    HowTo("check-gift-card-balance", "See what's left on a gift card", ("Open Account settings › Gift cards.",
          "Enter the 16-digit code.", "The balance and the last use are shown."), "Gift cards have no fees."),
    HowTo("return-without-printer", "Return a parcel with no printer at home", ("Start the return and choose QR "
          "code instead of label.", "Show the QR code on your phone at any UPS Store.", "The store prints the "
          "label and sticks it on for you."), "Keep the drop-off receipt until the refund arrives."),
    HowTo("notify-me-when-back", "Get an email when an item is back in stock", ("Open the product page.",
          "Select Notify me and enter your email.", "We send one email when it is back."),
          "We don't take backorders."),
    HowTo("redirect-ups-parcel", "Redirect a parcel that has already shipped", ("Copy the tracking number from "
          "the shipping email.", "Sign in to UPS My Choice or FedEx Delivery Manager.", "Choose a new address or "
          "a pick-up point; the carrier may charge a fee."), "We can't change the address once an order is "
          "processing."),
    HowTo("link-guest-orders", "See your guest orders in your new account", ("Create an account with the same "
          "email you used at checkout.", "Confirm the email address.", "Your earlier guest orders appear under "
          "Orders."), "This happens automatically; no need to contact us."),
    HowTo("change-email-address", "Change the email address you sign in with", ("Open Account settings.",
          "Enter the new email under Email.", "Open the confirmation link we send to the new address."),
          "Until you confirm, the old address keeps working."),
    HowTo("unsubscribe-marketing", "Stop marketing emails", ("Open any marketing email.", "Select Unsubscribe "
          "at the bottom.", "Or switch off Marketing in Account settings › Notifications."),
          "Order and shipping emails keep coming; they aren't marketing."),
    HowTo("start-a-return-in-chat", "Start a return by chatting with the assistant", ("Open the chat on any page.",
          "Say which order and items you want to return and why.", "Confirm when the assistant asks; the label "
          "arrives by email."), "Returns need the order to be delivered."),
    HowTo("apply-promo-code", "Apply a discount code at checkout", ("Go to checkout.", "Type the code in the Promo "
          "code field.", "Select Apply and check the new total before paying."), "One code per order."),
    HowTo("tax-exempt-certificate", "Register as a tax-exempt organization", ("Email us your exemption "
          "certificate from the account's email address.", "We review it within 3 business days.", "Future orders "
          "from that account are then not taxed."), "Tax already paid on past orders isn't refunded."),
    HowTo("company-name-on-invoice", "Put your company name on an invoice", ("Contact support with the order "
          "number.", "Give the company name and tax number to add.", "We email the corrected invoice within 1 "
          "business day."), "Only the billing details change, never the items or prices."),
    HowTo("report-phishing", "Report a suspicious email or text", ("Don't click any link in it.", "Forward it to "
          "our support team.", "Delete it."), "We never ask for a password, card number or one-time code."),
    HowTo("request-data-copy", "Get a copy of your personal data", ("Write to support from the account's email "
          "address.", "Confirm your identity when we ask.", "We send the file within 30 days."),
          "The copy is a JSON file with your orders, addresses and conversations."),
    HowTo("talk-to-a-person", "Reach a human agent", ("Open the chat.", "Type \"talk to a person\".",
          "The conversation and its summary go to our team."), "Weekday hours are 8 am - 8 pm US Eastern."),
    HowTo("photo-of-damage", "Send us photos of a damaged item", ("Take one photo of the item and one of the box.",
          "Attach them in the chat or reply to your order email.", "Keep the item until we confirm."),
          "Report damage within 30 days of delivery."),
    HowTo("cancel-pending-order", "Cancel an order that hasn't shipped", ("Open the order in your account.",
          "Check that its status is Pending.", "Select Cancel order and confirm."), "Processing orders can't be "
          "cancelled; refuse the delivery instead."),
    HowTo("pay-with-two-methods", "Split a payment between a gift card and a card", ("Enter the gift card code "
          "at checkout first.", "Choose a card or PayPal for the rest.", "Place the order."), "Only one gift card "
          "per order."),
    HowTo("hold-at-pickup-location", "Have a parcel held at a pick-up location", ("Open the carrier's tracking "
          "page.", "Choose Hold at location.", "Bring photo ID when you collect it."), "Parcels that need a "
          "signature can be held too."),
    HowTo("share-tracking-link", "Share your tracking link with someone else", ("Open the shipping email.",
          "Copy the tracking link.", "Send it; no sign-in is needed to see tracking."), "The link shows no "
          "address or prices."),
    HowTo("gift-receipt-return", "Return a gift you received", ("Find the order number on the gift receipt.",
          "Start the return in the chat with that number.", "Choose gift card if you'd rather not refund the "
          "buyer."), "Holiday gifts can be returned until January 31."),
    HowTo("sign-out-everywhere", "Sign out on all your devices", ("Open Account settings › Security.",
          "Select Sign out everywhere.", "Sign in again on the devices you use."), "Do this after changing a "
          "password you think was seen."),
    HowTo("refund-reference-for-bank", "Get a refund reference for your bank", ("Wait 10 business days after the "
          "refund email.", "Ask support for the refund reference.", "Give the reference to your bank."),
          "Banks can trace a refund with it."),
)  # fmt: skip


@dataclass(frozen=True)
class Translation:
    slug: str  # the English article it translates
    language: str  # "de" or "zh"
    title: str
    body: str


TRANSLATIONS: tuple[Translation, ...] = (
    Translation("return-policy", "de", "Unsere Rückgaberichtlinie", "Die meisten Artikel kannst du innerhalb von **30 "
                "Tagen nach der Zustellung** zurückgeben und erhältst das Geld auf dein ursprüngliches "
                "Zahlungsmittel zurück. Die Artikel müssen unbenutzt und originalverpackt sein.\n\n## Kosten\n\n"
                "- Kostenlos bei beschädigter, defekter oder falscher Ware.\n- Bei anderen Rücksendungen ziehen wir "
                "für das vorfrankierte Etikett 6,95 $ von der Erstattung ab.\n\n## Feiertage\n\nBestellungen "
                "zwischen dem 1. November und dem 24. Dezember können bis zum 31. Januar zurückgegeben werden."),
    Translation("refund-timing", "de", "Wann bekomme ich meine Erstattung?", "Nach Eingang prüfen wir die "
                "Rücksendung innerhalb von 3 Werktagen und erstatten dann auf das ursprüngliche Zahlungsmittel.\n\n"
                "| Zahlungsart | Dauer bis zur Gutschrift |\n|---|---|\n| Kredit- und Debitkarte | 5-10 "
                "Werktage |\n| PayPal | 3-5 Werktage |\n| Geschenkkarte | sofort |\n\nNach mehr als 10 Werktagen "
                "schicken wir dir die Erstattungsreferenz für deine Bank."),
    Translation("shipping-times-and-costs", "de", "Versandzeiten und Versandkosten", "Wir liefern an alle 50 "
                "US-Bundesstaaten.\n\n- **Bearbeitung**: 1-2 Werktage.\n- **Standardversand**: 3-5 Werktage, ab "
                "50 $ Bestellwert kostenlos, sonst 5,99 $.\n- **Expressversand**: 1-2 Werktage für 14,99 $, bei "
                "Bestellung vor 13 Uhr (US-Ostküstenzeit).\n\nNach Alaska und Hawaii kann es 2-4 Tage länger "
                "dauern."),
    Translation("cancel-an-order", "de", "Eine Bestellung stornieren", "Solange der Status **Ausstehend** "
                "(Pending) ist, kannst du die Bestellung stornieren. Ab **In Bearbeitung** geht das nicht mehr: "
                "Verweigere dann die Annahme oder sende die Ware innerhalb von 30 Tagen zurück. Die "
                "Zahlungsreservierung gibt deine Bank innerhalb von 3-5 Werktagen frei."),
    Translation("change-shipping-address", "de", "Lieferadresse ändern", "Die Lieferadresse lässt sich nur "
                "ändern, solange die Bestellung **ausstehend** ist. Nenne dem Assistenten die Bestellnummer und "
                "die vollständige neue Adresse. Ist das Paket schon unterwegs, kann der Empfänger es über UPS My "
                "Choice oder FedEx Delivery Manager umleiten (gegen Gebühr)."),
    Translation("payment-methods", "de", "Zahlungsarten", "Wir akzeptieren Visa, Mastercard, American Express, "
                "Discover, PayPal, Apple Pay, Google Pay und unsere Geschenkkarten. Eine Geschenkkarte lässt sich "
                "mit einer weiteren Zahlungsart kombinieren. Nachnahme, Scheck und Überweisung sind nicht möglich. "
                "Die Karte wird beim Versand belastet."),
    Translation("gift-cards", "de", "Geschenkkarten", "Digitale Geschenkkarten gibt es von 10 $ bis 500 $, "
                "per E-Mail zu einem Wunschtermin. Sie **verfallen nie** und kosten keine Gebühren. Zum Einlösen "
                "den 16-stelligen Code an der Kasse eingeben."),
    Translation("product-warranty", "de", "Produktgarantie", "## Garantiezeiten\n\n| Kategorie | Garantie |\n"
                "|---|---|\n| Elektronik | 1 Jahr |\n| Messer, Kochgeschirr, Gusseisen | 5 Jahre |\n| Zelte, "
                "Schlafsäcke, Rucksäcke, Outdoor | 2 Jahre |\n| Alles andere | 1 Jahr |\n\nNicht abgedeckt sind "
                "normale Abnutzung, Unfallschäden und unsachgemäßer Gebrauch."),
    Translation("reset-password", "de", "Passwort zurücksetzen", "1. Auf der Anmeldeseite „Passwort vergessen?“ "
                "wählen.\n2. E-Mail-Adresse eingeben: Der Link gilt 60 Minuten.\n3. Ein neues Passwort mit "
                "mindestens 10 Zeichen wählen.\n\nUnser Team fragt nie nach deinem Passwort."),
    Translation("contact-support", "de", "Kontakt zu einem Mitarbeiter", "Bitte im Chat einfach um einen "
                "Menschen. Unser Team arbeitet Montag bis Freitag 8-20 Uhr und Samstag 10-16 Uhr "
                "(US-Ostküstenzeit)."),
    Translation("non-returnable-items", "de", "Artikel, die nicht zurückgegeben werden können", "Aus "
                "Hygienegründen sind geöffnete In-Ear-Kopfhörer, Kissen und Socken sowie angezündete Kerzen von "
                "der Rückgabe ausgeschlossen, außer sie sind beschädigt oder defekt. Geschenkkarten und Artikel "
                "mit „Final sale“ ebenfalls."),
    Translation("damaged-item", "de", "Mein Artikel kam beschädigt an", "Melde dich innerhalb von 30 Tagen nach "
                "Zustellung mit Bestellnummer und Fotos des Schadens. Wir schicken kostenlos Ersatz oder erstatten "
                "den vollen Betrag einschließlich Versand."),
    Translation("return-policy", "zh", "退货政策", "大多数商品可在**签收后 30 天内**退货，款项退回原支付方式。"
                "商品须未使用并保留原包装。\n\n## 费用\n\n- 商品损坏、有缺陷或发错货时免费退货。\n"
                "- 其他原因（如改变主意）使用预付标签退货，将从退款中扣除 6.95 美元。\n\n## 节假日\n\n"
                "11 月 1 日至 12 月 24 日之间的订单可在次年 1 月 31 日前退货。"),
    Translation("refund-timing", "zh", "退款多久到账？", "我们收到退货后 3 个工作日内完成检查，并退款到原支付方式。"
                "\n\n| 支付方式 | 到账时间 |\n|---|---|\n| 信用卡和借记卡 | 5-10 个工作日 |\n| PayPal | 3-5 "
                "个工作日 |\n| 礼品卡 | 立即 |\n\n超过 10 个工作日未到账，请联系我们获取退款参考号。"),
    Translation("shipping-times-and-costs", "zh", "配送时间和运费", "我们配送至美国全部 50 个州。\n\n"
                "- **处理时间**：1-2 个工作日。\n- **标准配送**：3-5 个工作日，订单满 50 美元免运费，否则 5.99 "
                "美元。\n- **加急配送**：1-2 个工作日，14.99 美元，需在美国东部时间下午 1 点前下单。\n\n"
                "阿拉斯加和夏威夷可能多需 2-4 天。"),
    Translation("cancel-an-order", "zh", "取消订单", "订单状态为**待处理**时可以取消。进入**处理中**后就无法取消，"
                "可以拒收包裹，或在签收后 30 天内退货。银行会在 3-5 个工作日内释放预授权。"),
    Translation("change-shipping-address", "zh", "修改收货地址", "只有订单处于**待处理**状态时才能修改收货地址。"
                "请告诉助手订单号和完整的新地址。包裹发出后，收件人可以通过 UPS My Choice 或 FedEx Delivery "
                "Manager 改派（可能收费）。"),
    Translation("payment-methods", "zh", "支付方式", "我们接受 Visa、Mastercard、American Express、Discover、"
                "PayPal、Apple Pay、Google Pay 和本店礼品卡。一张礼品卡可以与另一种支付方式合用。不支持货到付款、"
                "支票或银行转账。发货时才会扣款。"),
    Translation("gift-cards", "zh", "礼品卡", "电子礼品卡面额 10 至 500 美元，通过电子邮件在指定日期送达。"
                "礼品卡**永不过期**，没有任何费用。结账时输入 16 位卡号即可使用。"),
    Translation("product-warranty", "zh", "产品保修", "## 保修期\n\n| 类别 | 保修期 |\n|---|---|\n| 电子产品 | 1 年 "
                "|\n| 刀具、锅具、铸铁锅 | 5 年 |\n| 帐篷、睡袋、背包等户外装备 | 2 年 |\n| 其他商品 | 1 年 |\n\n"
                "正常磨损、意外损坏和使用不当不在保修范围内。"),
    Translation("reset-password", "zh", "重置密码", "1. 在登录页面选择“忘记密码？”。\n2. 输入账户邮箱，重置链接 60 "
                "分钟内有效。\n3. 设置至少 10 个字符的新密码。\n\n客服永远不会向你索要密码。"),
    Translation("contact-support", "zh", "联系人工客服", "在聊天中说明需要人工客服即可。客服团队工作时间为周一至周五 "
                "上午 8 点至晚上 8 点，周六上午 10 点至下午 4 点（美国东部时间）。"),
    Translation("non-returnable-items", "zh", "不可退货的商品", "出于卫生原因，已拆封的入耳式耳机、枕头和袜子，以及"
                "点燃过的蜡烛不能退货，除非商品损坏或有缺陷。礼品卡和标有“Final sale”的商品也不能退货。"),
    Translation("damaged-item", "zh", "收到的商品有损坏", "请在签收后 30 天内提供订单号和损坏照片联系我们。"
                "我们会免费补发或全额退款（含运费）。"),
)  # fmt: skip


def section_of(slug: str) -> str:
    if slug in RETURN_SLUGS:
        return "returns"
    return "account" if slug in ACCOUNT_SLUGS else "orders"


def city_slug(name: str) -> str:
    return name.lower().replace(" ", "-")
