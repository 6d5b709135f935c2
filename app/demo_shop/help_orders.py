"""Help-center articles about orders, shipping and delivery (demo content that matches the demo shop's rules)."""

from __future__ import annotations

from app.demo_shop.catalog import HelpArticleSeed, article

ORDER_ARTICLES: tuple[HelpArticleSeed, ...] = (
    article(
        "order-status-explained",
        "What your order status means",
        ("order", "status", "pending", "processing", "shipped", "delivered", "cancelled"),
        """
        Every order moves through the same steps. You can see the current one in your account under
        Orders, or by asking our assistant for the order number (it looks like #W1234567).

        - **Pending**: we have your order and payment authorization. You can still cancel it or change the
          shipping address.
        - **Processing**: our warehouse is picking and packing your items. From this point the order can no
          longer be cancelled or changed.
        - **Shipped**: the parcel is with the carrier. A tracking number is attached to the order.
        - **Delivered**: the carrier confirmed delivery. Your 30-day return window starts on this date.
        - **Cancelled**: the order was stopped before it shipped. Any payment authorization is released and
          disappears from your statement within 3-5 business days, depending on your bank.

        Most orders move from Pending to Processing within 1 business day.
        """,
    ),
    article(
        "track-your-order",
        "How to track your order",
        ("tracking", "shipment", "carrier", "where is my order", "where is my package", "ups", "fedex"),
        """
        As soon as your order ships we email you the carrier and tracking number. You can also ask our
        assistant "where is my order?" with your order number, or open the order in your account.

        - UPS tracking numbers start with **1Z** and are 18 characters long.
        - FedEx tracking numbers are **12 digits**.

        Tracking usually starts showing movement within 24 hours of the label being created. If it still
        says "label created" after 2 business days, contact us and we will check with the warehouse.
        Orders that ship in more than one package have one tracking number per package.
        """,
    ),
    article(
        "shipping-times-and-costs",
        "Shipping times and costs",
        ("shipping", "delivery time", "cost", "free shipping", "express"),
        """
        We ship to all 50 US states from warehouses in Nevada, Ohio and Pennsylvania.

        - **Processing**: orders leave the warehouse within 1-2 business days.
        - **Standard shipping**: 3-5 business days after dispatch. Free on orders of $50 or more; $5.99 below.
        - **Express shipping**: 1-2 business days after dispatch, $14.99, when ordered before 1 pm Eastern.

        Business days are Monday to Friday, excluding US federal holidays. Delivery estimates shown at checkout
        and in tracking are the carrier's estimates, not guarantees. Alaska and Hawaii can take 2-4 extra days.
        """,
    ),
    article(
        "cancel-an-order",
        "Cancelling an order",
        ("cancel", "cancellation", "order", "pending", "stop order"),
        """
        You can cancel an order while its status is **Pending**. Ask our assistant to cancel it and confirm
        when asked, or use Cancel order on the order page in your account.

        Once an order is **Processing**, **Shipped** or **Delivered** it can no longer be cancelled, because
        the warehouse has already started packing it. In that case you can:

        1. Refuse the delivery when the carrier arrives; the parcel comes back to us and we refund it once it
           is received.
        2. Or accept it and start a return within 30 days of delivery.

        When a pending order is cancelled, the payment authorization is released by your bank within
        3-5 business days. You are never charged for a cancelled order.
        """,
    ),
    article(
        "change-shipping-address",
        "Changing the shipping address on an order",
        ("address", "change address", "shipping address", "wrong address", "pending"),
        """
        The shipping address can be changed while the order is **Pending**. Ask our assistant with your order
        number and the full new address (name, street, apartment if any, city, state, ZIP code), and confirm
        the change when asked.

        After the order moves to Processing the address is printed on the label and we cannot change it.
        If the parcel has already shipped, you can ask the carrier directly: UPS My Choice and FedEx Delivery
        Manager let the recipient redirect many parcels for a fee. If the parcel comes back to us as
        undeliverable, we refund it in full once it arrives.

        To avoid this next time, check the address on the order confirmation email right after ordering.
        """,
    ),
    article(
        "modify-items-in-order",
        "Adding or removing items after you've ordered",
        ("modify order", "add item", "remove item", "change quantity", "edit order"),
        """
        We cannot add items to, or remove items from, an order that has been placed, because payment and
        packing are tied to the original order.

        - If the order is still **Pending**, cancel it and place a new order with the items you want.
        - If it is already **Processing** or later, place a separate order for extra items, and return anything
          you don't want after delivery (see "Our return policy").

        Promo codes used on a cancelled order can be used again on the new one.
        """,
    ),
    article(
        "delivered-but-not-received",
        "My package says delivered but I can't find it",
        ("missing package", "not received", "delivered", "stolen", "lost package"),
        """
        Sometimes a parcel is scanned as delivered a little before it actually arrives, or is left somewhere
        unexpected. Before contacting us, please:

        1. Wait until the end of the next business day; many "missing" parcels show up by then.
        2. Check around your property: porch, back door, garage, mailbox, parcel locker, building front desk.
        3. Ask neighbours and anyone else at the address.
        4. Look at the tracking details for a delivery photo or a note such as "left with neighbour".

        If it is still missing after 2 business days, contact us with your order number. We open an
        investigation with the carrier and, once it is confirmed lost, send a replacement or a full refund.
        """,
    ),
    article(
        "delivery-exception",
        "What a delivery exception means",
        ("exception", "delayed", "delivery attempt", "tracking", "carrier problem"),
        """
        A delivery exception means something stopped the parcel on its normal route: a missed delivery
        attempt, an address the driver couldn't find, bad weather, or an inspection at a carrier facility.
        Most exceptions resolve on their own within 1-3 business days.

        What you can do:
        - Missed attempt: the carrier tries again on the next business day, usually up to three times.
        - Address problem: contact the carrier with your tracking number, or contact us and we will pass on a
          corrected address.
        - Weather or network delays: no action needed; the estimated delivery date updates automatically.

        If the parcel is returned to us, we refund you in full or reship it, whichever you prefer.
        """,
    ),
    article(
        "split-shipments",
        "Why did my order arrive in more than one package?",
        ("split shipment", "multiple packages", "partial delivery", "missing item"),
        """
        When items in one order are stocked in different warehouses, or are too large to pack together, we
        send them in separate packages so nothing waits. Each package has its own tracking number, and the
        packages can arrive on different days.

        You never pay extra shipping for a split shipment. If one package has arrived and the others haven't,
        check the other tracking numbers on the order before reporting an item as missing.
        """,
    ),
    article(
        "international-shipping",
        "Shipping outside the United States",
        ("international", "canada", "customs", "duties", "overseas"),
        """
        We currently ship to addresses in the United States only, including Alaska, Hawaii and US territories.
        We don't ship to Canada or other countries yet, and we can't forward an order to an international
        address after it has been placed.

        If you use a package-forwarding service with a US address, we ship to that address like any other;
        the forwarding company is responsible for the rest of the journey, including customs and duties.
        Returns must still be sent from a US address.
        """,
    ),
    article(
        "po-box-and-military-addresses",
        "Shipping to P.O. boxes and APO/FPO addresses",
        ("po box", "apo", "fpo", "military", "address"),
        """
        UPS and FedEx cannot deliver to P.O. boxes. If your order has a P.O. box as its shipping address, we
        send it with USPS instead, which can add 1-3 business days.

        APO, FPO and DPO military addresses are welcome and always ship with USPS. Delivery to these addresses
        usually takes 7-21 days after dispatch, and tracking may stop updating once the parcel enters the
        military postal system.
        """,
    ),
    article(
        "out-of-stock-and-backorders",
        "Out-of-stock items and backorders",
        ("out of stock", "backorder", "restock", "availability"),
        """
        If an item is out of stock, its page shows "Notify me". Enter your email and we'll send one message
        when it's back; we don't use that address for anything else.

        We don't take backorders: you are only charged for items we can ship now. If an item sells out after
        you order it (which is rare), we contact you within 1 business day and refund that item in full.
        """,
    ),
    article(
        "signature-required-deliveries",
        "Deliveries that need a signature",
        ("signature", "delivery", "high value", "missed delivery"),
        """
        Orders over $500 need an adult signature on delivery, to protect you against theft. If nobody is home,
        the carrier leaves a notice and tries again the next business day, up to three attempts.

        After a missed attempt you can:
        - sign the notice online to release the parcel (where the carrier allows it),
        - ask the carrier to hold it at a nearby pick-up location,
        - or schedule a new delivery date with the carrier using your tracking number.
        """,
    ),
    article(
        "holiday-shipping",
        "Holiday shipping deadlines and delays",
        ("holiday", "christmas", "deadline", "delay", "peak season"),
        """
        Between mid-November and the end of December carriers handle far more parcels than usual, so delivery
        can take 1-3 days longer than the normal estimate.

        To receive an order before December 24 in the contiguous US:
        - Standard shipping: order by December 15.
        - Express shipping: order by December 20, before 1 pm Eastern.

        Orders placed between November 1 and December 24 can be returned until January 31 (see "Extended
        holiday returns").
        """,
    ),
)
