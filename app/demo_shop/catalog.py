"""Fixed ingredients of the demo shop: products, names, streets and cities.

Everything here is invented. Emails use the reserved ``example.com`` domain and phone numbers the 555-01xx range
that North American numbering keeps for fiction, so demo data can never reach a real person.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogProduct:
    sku: str
    name: str
    price_cents: int


@dataclass(frozen=True)
class City:
    name: str
    region: str  # US state code
    postal_prefix: str  # first three digits of the ZIP code
    area_code: str


PRODUCTS: tuple[CatalogProduct, ...] = (
    CatalogProduct("KT-1001", "Cast Iron Skillet, 10 in", 3499),
    CatalogProduct("KT-1002", "Stainless Steel Saucepan, 2 qt", 4299),
    CatalogProduct("KT-1003", "Chef's Knife, 8 in", 5999),
    CatalogProduct("KT-1004", "Bamboo Cutting Board Set", 2899),
    CatalogProduct("KT-1005", "Pour-Over Coffee Kettle", 4499),
    CatalogProduct("KT-1006", "Ceramic Mug Set (4)", 3299),
    CatalogProduct("KT-1007", "Glass Food Storage Set (10)", 3899),
    CatalogProduct("KT-1008", "Burr Coffee Grinder", 8999),
    CatalogProduct("HM-2001", "Linen Duvet Cover, Queen", 12900),
    CatalogProduct("HM-2002", "Cotton Bath Towel Set (6)", 5900),
    CatalogProduct("HM-2003", "Wool Throw Blanket", 7900),
    CatalogProduct("HM-2004", "Memory Foam Pillow", 4900),
    CatalogProduct("HM-2005", "Blackout Curtains, 84 in (pair)", 6400),
    CatalogProduct("HM-2006", "Scented Soy Candle, Cedar", 2400),
    CatalogProduct("HM-2007", "Woven Storage Basket", 2900),
    CatalogProduct("EL-3001", "Wireless Earbuds", 7999),
    CatalogProduct("EL-3002", "Bluetooth Speaker, Waterproof", 5999),
    CatalogProduct("EL-3003", "USB-C Charging Hub, 7-port", 4599),
    CatalogProduct("EL-3004", "Smart LED Bulb (2-pack)", 2499),
    CatalogProduct("EL-3005", "Noise-Cancelling Headphones", 19999),
    CatalogProduct("EL-3006", "Portable Power Bank, 20000 mAh", 4999),
    CatalogProduct("EL-3007", "Fitness Tracker Band", 8999),
    CatalogProduct("EL-3008", "Mechanical Keyboard", 11999),
    CatalogProduct("OD-4001", "Insulated Water Bottle, 32 oz", 3499),
    CatalogProduct("OD-4002", "Two-Person Camping Tent", 18900),
    CatalogProduct("OD-4003", "Down Sleeping Bag", 15900),
    CatalogProduct("OD-4004", "Trail Running Daypack, 18 L", 8900),
    CatalogProduct("OD-4005", "Trekking Poles (pair)", 6900),
    CatalogProduct("OD-4006", "Camp Stove, Single Burner", 5400),
    CatalogProduct("OD-4007", "Headlamp, Rechargeable", 3900),
    CatalogProduct("AP-5001", "Merino Wool Socks (3-pack)", 2900),
    CatalogProduct("AP-5002", "Rain Shell Jacket", 14900),
    CatalogProduct("AP-5003", "Fleece Quarter-Zip", 7900),
    CatalogProduct("AP-5004", "Canvas Tote Bag", 2200),
    CatalogProduct("AP-5005", "Leather Belt", 4800),
    CatalogProduct("AP-5006", "Wool Beanie", 2600),
    CatalogProduct("GD-6001", "Ceramic Planter, Large", 4400),
    CatalogProduct("GD-6002", "Pruning Shears", 2700),
    CatalogProduct("GD-6003", "Raised Garden Bed Kit", 12900),
    CatalogProduct("GD-6004", "Solar Path Lights (6-pack)", 3900),
)

FIRST_NAMES: tuple[str, ...] = (
    "Maya", "Liam", "Olivia", "Noah", "Emma", "Ethan", "Ava", "Lucas", "Sophia", "Mason",
    "Isabella", "Logan", "Mia", "Elijah", "Amelia", "James", "Harper", "Benjamin", "Evelyn", "Henry",
    "Aria", "Samuel", "Chloe", "Daniel", "Zoe", "Mateo", "Nora", "Jack", "Layla", "Owen",
    "Priya", "Arjun", "Mei", "Hiroshi", "Fatima", "Omar", "Sofia", "Diego", "Ingrid", "Lars",
    "Amara", "Kwame", "Leila", "Tariq", "Elena", "Nikolai", "Grace", "Caleb", "Ruby", "Felix",
    "Hannah", "Isaac", "Julia", "Theo", "Naomi", "Adrian", "Clara", "Rohan", "Yuki", "Marcus",
)  # fmt: skip

LAST_NAMES: tuple[str, ...] = (
    "Thompson", "Nguyen", "Garcia", "Patel", "Kim", "Johnson", "Okafor", "Rossi", "Schmidt", "Silva",
    "Martin", "Chen", "Williams", "Lopez", "Andersson", "Haddad", "Kowalski", "Brown", "Tanaka", "Murphy",
    "Davis", "Rivera", "Singh", "Walker", "Moreau", "Novak", "Clarke", "Mendes", "Ibrahim", "Foster",
    "Hughes", "Park", "Bennett", "Costa", "Reyes", "Fischer", "Ward", "Shah", "Lindqvist", "Campbell",
    "Diaz", "Young", "Morgan", "Sato", "Mensah", "Price", "Ortiz", "Gray", "Khan", "Sullivan",
)  # fmt: skip

STREET_NAMES: tuple[str, ...] = (
    "Maple", "Oak", "Cedar", "Pine", "Elm", "Willow", "Birch", "Lakeview", "Hillcrest", "Sunset",
    "Riverside", "Meadow", "Highland", "Park", "Washington", "Lincoln", "Jefferson", "Franklin", "Madison",
    "Spring", "Church", "Mill", "Harbor", "Ridge", "Forest", "Valley", "Orchard", "Canyon", "Prospect",
)  # fmt: skip

STREET_SUFFIXES: tuple[str, ...] = ("St", "Ave", "Rd", "Ln", "Dr", "Ct", "Way", "Blvd", "Pl")

CITIES: tuple[City, ...] = (
    City("Portland", "OR", "972", "503"),
    City("Seattle", "WA", "981", "206"),
    City("San Francisco", "CA", "941", "415"),
    City("Los Angeles", "CA", "900", "213"),
    City("San Diego", "CA", "921", "619"),
    City("Denver", "CO", "802", "303"),
    City("Austin", "TX", "787", "512"),
    City("Houston", "TX", "770", "713"),
    City("Chicago", "IL", "606", "312"),
    City("Minneapolis", "MN", "554", "612"),
    City("Madison", "WI", "537", "608"),
    City("Columbus", "OH", "432", "614"),
    City("Atlanta", "GA", "303", "404"),
    City("Nashville", "TN", "372", "615"),
    City("Raleigh", "NC", "276", "919"),
    City("Boston", "MA", "021", "617"),
    City("Brooklyn", "NY", "112", "718"),
    City("Philadelphia", "PA", "191", "215"),
    City("Baltimore", "MD", "212", "410"),
    City("Miami", "FL", "331", "305"),
    City("Phoenix", "AZ", "850", "602"),
    City("Salt Lake City", "UT", "841", "801"),
    City("Boise", "ID", "837", "208"),
    City("Burlington", "VT", "054", "802"),
)

# Where parcels leave from; carrier scans start here.
WAREHOUSES: tuple[str, ...] = ("Reno, NV", "Columbus, OH", "Allentown, PA")

REFUND_REASONS: tuple[str, ...] = (
    "Item arrived damaged",
    "Wrong size, customer returned the item",
    "Item not as described",
    "Changed mind within the return window",
    "Missing item in the package",
    "Defective on arrival",
    "Received the wrong color",
)

SHIPMENT_EXCEPTIONS: tuple[str, ...] = (
    "Delivery attempted: no one available to sign",
    "Address could not be located; carrier is contacting the recipient",
    "Weather delay in the carrier network",
    "Package held at a carrier facility for inspection",
)
