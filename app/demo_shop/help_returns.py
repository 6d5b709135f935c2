"""Help-center articles about returns, refunds, exchanges and warranty (demo content matching the shop's rules)."""

from __future__ import annotations

from app.demo_shop.catalog import HelpArticleSeed, article

RETURN_ARTICLES: tuple[HelpArticleSeed, ...] = (
    article(
        "return-policy",
        "Our return policy",
        ("return", "returns", "return policy", "30 days", "return window"),
        """
        You can return most items within **30 days of delivery** for a refund to your original payment
        method. Items must be unused, in their original packaging, with all accessories and manuals.

        - Returns are free when the item is damaged, defective or not what you ordered.
        - For other returns (changed your mind, wrong size) a $6.95 return-shipping fee is deducted from the
          refund, unless you drop the parcel off yourself with your own carrier.
        - Original shipping fees are refunded only when the return is our mistake.

        Some items can't be returned (see "Items that can't be returned"). Orders placed between November 1
        and December 24 can be returned until January 31.
        """,
    ),
    article(
        "how-to-return-an-item",
        "How to return an item step by step",
        ("return", "return label", "send back", "how to return", "drop off"),
        """
        1. Start the return: ask our assistant or open the order in your account and choose Return items.
           Tell us which items and why.
        2. Print the prepaid UPS label we email you (or show the QR code at a UPS Store; no printer needed).
        3. Pack the items securely in the original packaging if you still have it, and put the label on top.
        4. Drop the parcel at any UPS location within 14 days of starting the return.

        Keep the drop-off receipt until the refund arrives. We inspect returns within 3 business days of
        receiving them and email you when the refund is issued.
        """,
    ),
    article(
        "refund-timing",
        "When will I get my refund?",
        ("refund", "refund status", "how long", "money back", "timing"),
        """
        After we receive and inspect your return (within 3 business days of arrival), we issue the refund to
        your original payment method and email you a confirmation.

        How long it then takes to appear:
        - Credit and debit cards: 5-10 business days, depending on your bank.
        - PayPal: 3-5 business days.
        - Gift cards: immediately, back on the same gift card.

        For refunds approved without a return (for example a damaged item we asked you to keep), the same
        timings apply from the approval date. If it has been longer than 10 business days, contact us with
        your order number and we'll send you the refund reference to give to your bank.
        """,
    ),
    article(
        "refund-amounts",
        "How much will be refunded",
        ("refund", "partial refund", "amount", "shipping fee", "refund amount"),
        """
        A refund is for the price you actually paid for the returned items, after any discount or promo code.
        The total refunded on an order can never exceed what was paid for it, so if part of an order was
        already refunded, only the remainder can be refunded later.

        - Original shipping is refunded when the whole order is returned because of our mistake (damaged,
          defective, wrong item).
        - A $6.95 return-shipping fee is deducted for change-of-mind returns that use our prepaid label.
        - Partial refunds are possible when you keep an item with a minor problem; we agree the amount with
          you first.
        """,
    ),
    article(
        "damaged-item",
        "My item arrived damaged",
        ("damaged", "broken", "defective", "arrived damaged", "cracked"),
        """
        We're sorry it arrived that way. Please contact us within 30 days of delivery with:

        1. Your order number.
        2. One or two photos of the damage, and of the box if it was damaged too.

        We then offer a free replacement or a full refund, including original shipping. For small or fragile
        items we often ask you to keep or recycle the damaged item instead of sending it back. Please don't
        throw it away until we have confirmed.
        """,
    ),
    article(
        "wrong-or-missing-item",
        "I received the wrong item or something is missing",
        ("wrong item", "missing item", "incorrect", "not what I ordered", "incomplete"),
        """
        First check whether your order shipped in more than one package: each package has its own tracking
        number, and they can arrive on different days.

        If an item is really missing, or you received something you didn't order, contact us within 30 days
        of delivery with your order number and a photo of what you received. We send the correct item at no
        cost, or refund it if you prefer. For a wrong item, we email a prepaid label so you can send it back
        free of charge.
        """,
    ),
    article(
        "exchanges",
        "Exchanging for a different size or color",
        ("exchange", "size", "color", "swap", "different size"),
        """
        We don't do direct exchanges. The fastest way to get the right size or color is:

        1. Place a new order for the item you want, so it ships right away.
        2. Return the original item within 30 days of delivery (see "How to return an item step by step").

        Your refund for the returned item is issued as soon as we receive it. For size and color swaps of the
        same item we waive the $6.95 return-shipping fee: mention "exchange" when you start the return.
        """,
    ),
    article(
        "product-warranty",
        "Product warranty",
        ("warranty", "guarantee", "defect", "broken", "stopped working"),
        """
        Every product is covered against manufacturing defects:

        - Electronics (earbuds, headphones, speakers, chargers, keyboards, trackers): 1 year from delivery.
        - Kitchen knives, cookware and cast iron: 5 years.
        - Tents, sleeping bags, packs and outdoor gear: 2 years.
        - Everything else: 1 year.

        The warranty covers defects in materials and workmanship. It doesn't cover normal wear and tear,
        accidental damage, misuse, or products modified or repaired by someone else. Within the first 30 days a
        defective item can simply be returned for a refund; after that, see "How to make a warranty claim".
        """,
    ),
    article(
        "warranty-claim",
        "How to make a warranty claim",
        ("warranty", "claim", "repair", "replacement", "defective"),
        """
        1. Contact us with your order number (or the email address you ordered with) and a short description
           of the problem.
        2. Send a photo or a short video showing the defect; for electronics, tell us what you already tried
           (charging, resetting, another cable).
        3. We reply within 2 business days. If the defect is covered, we send a replacement, or a refund when
           the product is no longer available.

        We may ask you to return the faulty item with a prepaid label. Warranty replacements are covered for
        the rest of the original warranty period.
        """,
    ),
    article(
        "holiday-returns",
        "Extended holiday returns",
        ("holiday", "gift", "return", "christmas", "extended"),
        """
        Orders delivered between November 1 and December 24 can be returned until **January 31** of the next
        year, so gifts can be returned after the holidays.

        Gift recipients can start a return with the order number from the gift receipt. The refund goes to the
        original payment method of the person who bought it; if the recipient prefers, we can issue a gift
        card for the same amount instead.
        """,
    ),
    article(
        "non-returnable-items",
        "Items that can't be returned",
        ("non-returnable", "final sale", "hygiene", "exceptions"),
        """
        For hygiene and safety reasons these items can't be returned once opened, unless they are damaged or
        defective:

        - earbuds and in-ear headphones,
        - pillows and socks,
        - candles that have been lit.

        Gift cards and items marked "Final sale" on the product page can't be returned either. Everything else
        follows the normal 30-day return policy.
        """,
    ),
    article(
        "price-adjustment",
        "Price drops after you buy",
        ("price adjustment", "price drop", "sale", "price match", "discount"),
        """
        If we lower the price of an item within 14 days of your purchase, we refund the difference once. Ask
        our support team with your order number and the item; we check the price history and issue the
        difference to your original payment method.

        Price adjustments don't apply to flash sales lasting less than 24 hours, clearance items, or other
        retailers' prices (we don't price match).
        """,
    ),
    article(
        "refusing-a-delivery",
        "Refusing a delivery",
        ("refuse", "refuse delivery", "return to sender", "reject parcel"),
        """
        If an order can no longer be cancelled, you can refuse it when the carrier arrives: tell the driver
        you refuse the parcel, or mark it "Refused - return to sender" without opening it and hand it back to
        the carrier.

        When the parcel arrives back at our warehouse (usually 7-14 days later), we refund the items in full.
        The original shipping fee is not refunded for refused deliveries unless the order was our mistake.
        """,
    ),
)
