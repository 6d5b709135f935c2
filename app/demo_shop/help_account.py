"""Help-center articles about payment, accounts, privacy and contacting support (demo content)."""

from __future__ import annotations

from app.demo_shop.catalog import HelpArticleSeed, article

ACCOUNT_ARTICLES: tuple[HelpArticleSeed, ...] = (
    article(
        "payment-methods",
        "Payment methods we accept",
        ("payment", "credit card", "paypal", "apple pay", "google pay", "pay"),
        """
        We accept Visa, Mastercard, American Express and Discover credit and debit cards, PayPal, Apple Pay,
        Google Pay, and our own gift cards. You can combine one gift card with one other payment method.

        Your card is authorized when you order and charged when the order ships. Prices are in US dollars.
        We don't accept cash on delivery, checks or bank transfers.
        """,
    ),
    article(
        "payment-declined",
        "Why was my payment declined?",
        ("payment", "declined", "card declined", "payment failed", "billing"),
        """
        Payments are declined by the card issuer, not by us, and they don't tell us why. The most common causes:

        - the billing address or ZIP code doesn't match the one your bank has on file,
        - the card has expired, or the security code was mistyped,
        - the purchase is above your available balance or daily limit,
        - your bank blocked the payment as unusual; approving it in your banking app usually fixes this.

        Check the details and try again, or use another payment method. A declined attempt can show as a
        pending authorization for a few days; it is never charged and disappears on its own.
        """,
    ),
    article(
        "charged-twice",
        "I see two charges for one order",
        ("double charge", "charged twice", "pending charge", "authorization", "billing"),
        """
        Usually one of the two is a temporary **authorization**, not a charge. We authorize the amount when you
        order; if you edited the payment or an attempt was retried, an earlier authorization can stay visible
        as "pending" for 3-5 business days before your bank releases it.

        Only one charge is ever completed per order. If you still see two completed (not pending) charges after
        5 business days, contact us with your order number and the last four digits of the card, and we'll
        refund the duplicate right away.
        """,
    ),
    article(
        "gift-cards",
        "Gift cards",
        ("gift card", "balance", "redeem", "e-gift"),
        """
        Digital gift cards are available from $10 to $500 and are delivered by email, on a date you choose.
        They never expire and have no fees.

        - Redeem: enter the 16-digit code at checkout. One gift card can be combined with one other payment
          method.
        - Check the balance: in your account under Gift cards, or ask our support team.
        - Lost code: we can resend it to the recipient's email if you give us the order number it was bought
          with.

        Gift cards can't be exchanged for cash, except where the law requires it.
        """,
    ),
    article(
        "promo-codes",
        "Using a promo code",
        ("promo code", "discount code", "coupon", "voucher", "discount"),
        """
        Enter your code in the "Promo code" field at checkout and select Apply; the discount shows before you
        pay. Only one promo code can be used per order.

        If a code doesn't work, check the expiry date, the minimum order amount, and whether it excludes some
        products. Codes can't be added to an order after it has been placed. If the order is still pending, you
        can cancel it and order again with the code.
        """,
    ),
    article(
        "sales-tax",
        "Sales tax",
        ("tax", "sales tax", "vat", "tax exempt"),
        """
        We collect sales tax on orders shipped to states that require it. The rate depends on the shipping
        address and is shown at checkout before you pay. Tax on returned items is refunded together with the
        items.

        Tax-exempt organizations can send us their exemption certificate; once it is approved, future orders
        placed from that account are not taxed.
        """,
    ),
    article(
        "invoices-and-receipts",
        "Getting an invoice or receipt",
        ("invoice", "receipt", "vat invoice", "proof of purchase", "business"),
        """
        An order confirmation is emailed when you order, and a receipt when the order ships. You can download a
        PDF invoice any time from the order page in your account.

        If you need your company name or tax number on the invoice, contact us with the order number and the
        details to add; we send a corrected invoice within 1 business day.
        """,
    ),
    article(
        "account-and-guest-checkout",
        "Do I need an account?",
        ("account", "guest checkout", "sign up", "register", "create account"),
        """
        No. You can check out as a guest, and track the order with the link in the confirmation email or by
        asking our assistant with the order number and your email.

        An account lets you see all your orders in one place, start returns without the order number, save
        addresses, and check out faster. If you create an account with the same email you used as a guest,
        your earlier guest orders are linked to it automatically.
        """,
    ),
    article(
        "reset-password",
        "Resetting your password",
        ("password", "reset password", "forgot password", "login", "sign in"),
        """
        1. On the sign-in page, select "Forgot password?".
        2. Enter the email address of your account. We send a reset link that works for 60 minutes.
        3. Choose a new password of at least 10 characters.

        No email? Check your spam folder, and make sure you used the address you signed up with. For your
        security our support team can never see or set your password, and will never ask you for it.
        """,
    ),
    article(
        "update-account-details",
        "Changing your email, phone or saved addresses",
        ("account", "email", "phone number", "saved address", "profile"),
        """
        Sign in and open Account settings to change your name, email, phone number and saved addresses. A new
        email address must be confirmed from a link we send to it before the change takes effect.

        Changing a saved address doesn't change orders already placed. To change the address of an order that
        is still pending, see "Changing the shipping address on an order".
        """,
    ),
    article(
        "delete-account-and-data",
        "Deleting your account and your data",
        ("privacy", "delete account", "personal data", "gdpr", "ccpa", "data request"),
        """
        You can ask us to delete your account and personal data, or to send you a copy of the data we hold
        about you. Ask our support team from the email address on the account; we confirm your identity and
        complete the request within 30 days.

        Some records must be kept for legal reasons, such as invoices for tax purposes (7 years), but they are
        no longer linked to a usable account. Deleting your account cancels pending orders and removes saved
        addresses and payment methods; it doesn't affect refunds already in progress.
        """,
    ),
    article(
        "notification-preferences",
        "Email and SMS notifications",
        ("notifications", "sms", "email", "unsubscribe", "text messages"),
        """
        Order and shipping updates are sent by email, and by SMS if you added a mobile number and opted in at
        checkout. Marketing emails are separate and off unless you chose them.

        - Unsubscribe from marketing with the link at the bottom of any marketing email.
        - Stop SMS updates by replying STOP to any of our texts.
        - Change both in Account settings under Notifications.

        We never send one-time codes or payment requests by SMS.
        """,
    ),
    article(
        "phishing-and-scams",
        "Recognising fake messages about your order",
        ("scam", "phishing", "fraud", "fake email", "security"),
        """
        We will never ask you for your password, full card number, security code or a one-time code, by
        email, SMS, phone or chat. Our emails only come from addresses ending in our own domain.

        Be careful with messages about a "delivery fee" or "customs charge" that link to a payment page: our
        deliveries never require an extra payment. If you're unsure, don't click; open your account directly
        or ask our support team, and forward the suspicious message to us so we can warn other customers.
        """,
    ),
    article(
        "contact-support",
        "Contacting a person on our support team",
        ("contact", "human", "agent", "support hours", "talk to someone", "help"),
        """
        Our assistant can answer most questions and act on your orders at any time. Whenever you'd rather talk
        to a person, just ask for one in the chat: the conversation, with a summary, goes to our support team.

        Our support team works Monday to Friday 8 am - 8 pm and Saturday 10 am - 4 pm (US Eastern). Outside
        those hours your conversation waits in the queue and someone replies as soon as the team is back, usually
        within a few hours.
        """,
    ),
)
