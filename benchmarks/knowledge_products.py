"""The knowledge benchmark's product facts: what the help center says about each of the demo shop's 40 products.

SKUs, names and prices are the demo shop's (``app.demo_shop.catalog.PRODUCTS``); the warranty periods and the items
that can't be returned once opened follow its "Product warranty" and "Items that can't be returned" articles. The
rest (materials, sizes, weights, care, common problems) is invented here, one entry per product, so that each
product's pages answer questions no other page answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from app.demo_shop.catalog import PRODUCTS, CatalogProduct


@dataclass(frozen=True)
class ProductFacts:
    sku: str
    alias: str  # what a customer calls it ("the skillet"), never the catalog name
    material: str
    size: str
    weight: str
    colors: tuple[str, ...]
    care: tuple[str, ...]  # care steps, in order
    problems: tuple[tuple[str, str], ...]  # (what goes wrong, what to do)
    dishwasher_safe: bool | None = None  # None: not a kitchen question


# Category prefix of the SKU -> (category name, warranty in years). "Product warranty": electronics 1 year, knives,
# cookware and cast iron 5 years, outdoor gear 2 years, everything else 1 year.
CATEGORIES: dict[str, tuple[str, str]] = {
    "KT": ("Kitchen", "kitchen"),
    "HM": ("Home", "home"),
    "EL": ("Electronics", "electronics"),
    "OD": ("Outdoor", "outdoor"),
    "AP": ("Apparel", "apparel"),
    "GD": ("Garden", "garden"),
}
FIVE_YEAR_SKUS = frozenset({"KT-1001", "KT-1002", "KT-1003"})
# Opened earbuds, pillows and socks can't be returned (hygiene), unless damaged or defective; lit candles neither.
HYGIENE_SKUS = frozenset({"EL-3001", "HM-2004", "AP-5001", "HM-2006"})


def warranty_years(sku: str) -> int:
    if sku in FIVE_YEAR_SKUS:
        return 5
    return 2 if sku.startswith("OD") else 1


PRODUCT_FACTS: tuple[ProductFacts, ...] = (
    ProductFacts("KT-1001", "cast iron pan", "pre-seasoned cast iron", "10 in (25 cm) across, 2 in deep", "5.3 lb",
                 ("black",),
                 ("Rinse with hot water while still warm; use a little soap only when needed.",
                  "Dry it completely on the stove over low heat for two minutes.",
                  "Rub in half a teaspoon of vegetable oil and wipe off the excess."),
                 (("Orange rust spots after washing", "Scrub the rust off with steel wool, then re-season: thin coat "
                   "of oil, upside down in the oven at 450 °F for one hour."),
                  ("Food sticks to the surface", "The seasoning is thin; cook fatty foods for a few weeks and "
                   "re-season once.")),
                 dishwasher_safe=False),
    ProductFacts("KT-1002", "2 quart saucepan", "tri-ply stainless steel with an aluminium core", "2 qt, 6.3 in "
                 "across, glass lid", "2.4 lb", ("brushed steel",),
                 ("Let it cool before washing so the base does not warp.",
                  "Wash by hand or in the dishwasher.",
                  "Remove rainbow stains with a splash of white vinegar."),
                 (("White spots inside the pan", "Mineral deposits from hard water: boil water with a spoon of "
                   "vinegar, then wash."),
                  ("The handle feels loose", "The handle is riveted and can't loosen; contact us, it is covered by "
                   "the 5-year warranty.")),
                 dishwasher_safe=True),
    ProductFacts("KT-1003", "chef knife", "German X50CrMoV15 stainless steel, pakkawood handle", "8 in (20 cm) "
                 "blade", "7.4 oz", ("natural wood",),
                 ("Wash by hand right after use and dry it at once; never leave it soaking.",
                  "Hone it on a honing steel every few uses, at about 15 degrees.",
                  "Sharpen it on a 1000/6000 grit whetstone once or twice a year."),
                 (("The edge feels dull", "Hone it first; if it still crushes a tomato, sharpen it on a "
                   "whetstone or use our free sharpening by mail once a year."),
                  ("Small rust spots on the blade", "Rub them off with a paste of baking soda and water, rinse and "
                   "dry.")),
                 dishwasher_safe=False),
    ProductFacts("KT-1004", "bamboo boards", "organic Moso bamboo", "three boards: 15 x 10, 12 x 8 and 9 x 6 in",
                 "4.1 lb for the set", ("natural",),
                 ("Wash with warm soapy water and stand them upright to dry.",
                  "Oil them once a month with food-grade mineral oil.",
                  "Remove smells with coarse salt and half a lemon."),
                 (("A board has warped", "Lay it flat under a damp towel overnight; warping usually comes from "
                   "drying flat on one side."),
                  ("Small cracks along the edge", "Oil the board generously twice a day for two days.")),
                 dishwasher_safe=False),
    ProductFacts("KT-1005", "gooseneck kettle", "stainless steel with a built-in thermometer", "1 L (34 oz)",
                 "1.6 lb", ("matte black", "silver"),
                 ("Empty it after each use so scale does not build up.",
                  "Descale monthly with one part vinegar to two parts water, brought to a boil.",
                  "Wipe the outside with a soft cloth; it is not dishwasher safe."),
                 (("The thermometer reads wrong", "Check it in boiling water (212 °F at sea level) and turn the "
                   "calibration nut under the dial."),
                  ("It works on my gas stove but not on induction", "The kettle works on gas, electric and "
                   "induction hobs of at least 4.7 in; use a smaller ring.")),
                 dishwasher_safe=False),
    ProductFacts("KT-1006", "mugs", "stoneware with a reactive glaze", "12 oz each, set of four", "3.5 lb for the "
                 "set", ("speckled white", "ocean blue", "sage"),
                 ("Dishwasher and microwave safe.",
                  "Avoid sudden temperature changes such as pouring boiling water into a mug from the freezer.",
                  "Remove coffee stains with a paste of baking soda."),
                 (("Each mug looks slightly different", "The reactive glaze flows in the kiln, so no two mugs are "
                   "alike; this is not a defect."),
                  ("A mug arrived chipped", "Send us a photo within 30 days of delivery for a free replacement of "
                   "that mug.")),
                 dishwasher_safe=True),
    ProductFacts("KT-1007", "glass containers", "borosilicate glass with BPA-free snap lids", "10 containers from "
                 "12 oz to 5 cups", "7.9 lb for the set", ("clear with grey lids",),
                 ("Glass and lids are dishwasher safe (lids on the top rack).",
                  "The glass is oven safe up to 450 °F; the lids are not.",
                  "Let frozen glass thaw before putting it in a hot oven."),
                 (("A lid no longer seals", "Take out the silicone ring, wash it, and press it back evenly into "
                   "its groove."),
                  ("Cloudy film on the glass", "Hard-water residue: soak in warm water with vinegar.")),
                 dishwasher_safe=True),
    ProductFacts("KT-1008", "coffee grinder", "conical steel burrs, aluminium body", "40 grind settings, 8 oz bean "
                 "hopper", "3.1 lb", ("black", "white"),
                 ("Unplug it and brush the burrs once a week.",
                  "Run grinder-cleaning tablets through it once a month; never use rice.",
                  "Never wash the burrs in water."),
                 (("The grinder stops mid-grind", "The motor's thermal cut-out tripped: let it rest 20 minutes; "
                   "grind at most 60 seconds at a time."),
                  ("The grind is uneven", "Clean the burrs and check that the upper burr is locked at the notch.")),
                 dishwasher_safe=False),
    ProductFacts("HM-2001", "linen duvet cover", "100% stonewashed French linen", "Queen, 90 x 92 in, button "
                 "closure", "3.4 lb", ("white", "oat", "slate", "terracotta"),
                 ("Machine wash at 104 °F (40 °C) on a gentle cycle, with mild detergent.",
                  "Tumble dry low or line dry; linen softens with every wash.",
                  "Don't use bleach; it weakens the fibres."),
                 (("It shrank a little", "Linen shrinks up to 3% in the first hot wash; wash at 40 °C or lower."),
                  ("It feels stiff when line dried", "Tumble dry for ten minutes at the end, or shake it out well.")),
                 ),
    ProductFacts("HM-2002", "bath towels", "600 gsm long-staple cotton", "two bath, two hand and two washcloths",
                 "4.8 lb for the set", ("white", "charcoal", "sea blue"),
                 ("Wash before first use to remove the finish and improve absorbency.",
                  "Wash warm, no fabric softener: it coats the fibres.",
                  "Tumble dry medium."),
                 (("Lint after the first washes", "Normal for new cotton towels; it stops after three or four "
                   "washes."),
                  ("A loop has pulled out", "Trim it level with scissors; don't pull it.")),
                 ),
    ProductFacts("HM-2003", "wool blanket", "merino wool and alpaca blend", "50 x 70 in", "2.9 lb",
                 ("cream", "heather grey", "rust"),
                 ("Air it outside instead of washing it often.",
                  "Spot clean, or hand wash cold with wool detergent and dry flat.",
                  "Store it with cedar blocks to keep moths away."),
                 (("Small pills on the surface", "Pilling is normal for soft wool; remove it with a fabric comb."),
                  ("It felted in the washer", "Hot water and spinning felt wool; this isn't covered by the "
                   "warranty.")),
                 ),
    ProductFacts("HM-2004", "foam pillow", "memory foam with a removable bamboo-viscose cover", "Standard, 24 x 16 x "
                 "5 in", "3.3 lb", ("white",),
                 ("Machine wash the cover cold; never wash the foam core.",
                  "Air the core every few weeks away from direct sunlight.",
                  "Allow 24 hours for the pillow to expand fully after unpacking."),
                 (("It smells when new", "A mild smell from packaging fades within 72 hours in a ventilated room."),
                  ("It feels too firm", "Memory foam softens with body heat; give it two weeks.")),
                 ),
    ProductFacts("HM-2005", "blackout curtains", "triple-weave polyester", "two panels, 52 x 84 in each, 8 grommets",
                 "5.5 lb per pair", ("charcoal", "navy", "ivory"),
                 ("Machine wash cold on a gentle cycle.",
                  "Hang to dry; don't tumble dry, it damages the blackout layer.",
                  "Steam out creases on low heat."),
                 (("Light shows at the edges", "Mount the rod 4 in wider than the window on each side."),
                  ("Creases from the packaging", "Hang them for 48 hours or steam them on low heat.")),
                 ),
    ProductFacts("HM-2006", "cedar candle", "soy wax, cotton wick", "8 oz jar, about 45 hours of burn time",
                 "14 oz", ("amber glass",),
                 ("Burn it for two hours the first time, until the whole surface melts.",
                  "Trim the wick to 1/4 in before each lighting.",
                  "Never burn it for more than four hours at a time."),
                 (("It burns down the middle (tunnelling)", "Wrap foil around the rim with a hole in the middle "
                   "and burn it for an hour to even out the surface."),
                  ("The flame smokes", "The wick is too long; trim it.")),
                 ),
    ProductFacts("HM-2007", "storage basket", "hand-woven seagrass with cotton handles", "16 x 13 in, 12 in tall",
                 "1.5 lb", ("natural",),
                 ("Dust it with a soft brush or vacuum attachment.",
                  "Wipe spills with a damp cloth and let it dry in the air.",
                  "Keep it away from radiators so it doesn't dry out."),
                 (("It lost its shape in shipping", "Mist it lightly with water and stuff it with towels while it "
                   "dries."),
                  ("A grassy smell", "Natural seagrass smells for a few days; air it outside.")),
                 ),
    ProductFacts("EL-3001", "earbuds", "Bluetooth 5.3 earbuds with a USB-C charging case", "6 hours per charge, 24 "
                 "hours with the case, IPX4", "1.9 oz with the case", ("black", "white"),
                 ("Wipe the ear tips with a dry cloth; remove them to rinse them only.",
                  "Clean the charging contacts with a cotton swab.",
                  "Charge at least once every three months when not in use."),
                 (("One earbud doesn't connect", "Put both in the case, hold the case button for 10 seconds until "
                   "the light flashes white, then pair again."),
                  ("The case doesn't charge", "Use a USB-C cable and a charger of at least 5 W; clean the port.")),
                 ),
    ProductFacts("EL-3002", "waterproof speaker", "IP67 Bluetooth speaker", "12 hours of play, 20 W", "1.3 lb",
                 ("black", "teal", "coral"),
                 ("Rinse it with fresh water after salt water or pool water.",
                  "Dry it and close the USB-C flap before charging.",
                  "Store it half charged if you won't use it for a while."),
                 (("The sound is muffled after swimming", "Shake the water out of the grille and let it dry for "
                   "an hour."),
                  ("Two speakers won't pair together", "Press the link button on both within 30 seconds, with "
                   "the latest firmware.")),
                 ),
    ProductFacts("EL-3003", "USB-C hub", "aluminium 7-port hub with 100 W power delivery", "2 USB-A, 2 USB-C, HDMI "
                 "4K60, SD and microSD", "3.5 oz", ("space grey",),
                 ("Keep the vents clear; the hub gets warm under full load.",
                  "Unplug it by the body, not the cable.",
                  "Update your computer's display drivers before using HDMI."),
                 (("The external monitor stays black", "Use a USB-C port on the computer that supports video "
                   "(DisplayPort Alt Mode)."),
                  ("The laptop charges slowly", "Use a 100 W charger; the hub itself keeps 15 W.")),
                 ),
    ProductFacts("EL-3004", "smart bulbs", "Wi-Fi LED bulbs, A19 base E26", "800 lumens, 9 W, 2700-6500 K and 16 "
                 "million colors", "2.1 oz each", ("white",),
                 ("Use them in enclosed fixtures only if the fixture is ventilated.",
                  "Don't use them with dimmer switches; dim them in the app.",
                  "Keep them on a 2.4 GHz Wi-Fi network."),
                 (("The bulb won't join Wi-Fi", "They only work on 2.4 GHz; reset the bulb by switching it off and "
                   "on five times."),
                  ("The bulb flickers", "Take it off the dimmer switch and use a plain switch.")),
                 ),
    ProductFacts("EL-3005", "noise cancelling headphones", "over-ear Bluetooth headphones with active noise "
                 "cancelling", "30 hours with noise cancelling on, 3.5 mm cable included", "9.2 oz",
                 ("black", "silver", "midnight blue"),
                 ("Store them in the case with the ear cups folded flat.",
                  "Wipe the ear cushions with a slightly damp cloth.",
                  "Replace the ear cushions every 18 months; spare pairs are sold separately."),
                 (("Noise cancelling hisses", "Check the microphones aren't covered; a light hiss in a silent room "
                   "is normal."),
                  ("They won't switch between my laptop and phone", "Turn on multipoint in the app; two devices "
                   "can connect at once.")),
                 ),
    ProductFacts("EL-3006", "power bank", "lithium-ion power bank, 20000 mAh, 22.5 W fast charging", "6 x 3 x 1 in, "
                 "two USB-A and one USB-C", "12.7 oz", ("black", "white"),
                 ("Recharge it fully every three months.",
                  "Keep it out of hot cars; store it between 32 and 95 °F.",
                  "It can go in carry-on luggage (74 Wh), never in checked bags."),
                 (("It charges my phone slowly", "Use the USB-C port for fast charging; USB-A gives 12 W."),
                  ("The lights blink and it won't charge", "Charge it for 30 minutes with a 20 W USB-C charger to "
                   "wake the battery.")),
                 ),
    ProductFacts("EL-3007", "fitness band", "activity tracker with heart rate and sleep tracking", "1.1 in AMOLED "
                 "screen, 10 days of battery, 5 ATM water resistance", "0.9 oz", ("black", "lavender", "olive"),
                 ("Rinse the band after workouts and dry it.",
                  "Charge it with the magnetic cable; never with wet contacts.",
                  "Wear it a finger's width above the wrist bone for accurate heart rate."),
                 (("Steps are counted while driving", "Set the band to your non-dominant wrist in the app."),
                  ("It stopped syncing", "Turn Bluetooth off and on, then restart the band from Settings › "
                   "Restart.")),
                 ),
    ProductFacts("EL-3008", "mechanical keyboard", "75% layout, hot-swappable brown switches, PBT keycaps", "USB-C "
                 "wired and Bluetooth for up to three devices", "1.9 lb", ("grey", "white"),
                 ("Blow out dust with compressed air once a month.",
                  "Pull keycaps with the included puller to clean under them.",
                  "Spills: unplug it, turn it upside down and let it dry 48 hours."),
                 (("A key types twice", "Pull the switch with the tool and reseat it, or swap in a spare."),
                  ("Bluetooth drops", "Press Fn + 1, 2 or 3 for three seconds to re-pair that slot.")),
                 ),
    ProductFacts("OD-4001", "water bottle", "double-wall vacuum stainless steel", "32 oz, keeps cold 24 hours and "
                 "hot 12 hours", "15 oz", ("forest", "black", "glacier white", "sunset orange"),
                 ("Wash it by hand; the dishwasher can damage the vacuum seal and the powder coat.",
                  "Clean the straw lid with the brush once a week.",
                  "Don't freeze it or put carbonated drinks in it with the lid closed."),
                 (("The outside sweats or gets hot", "The vacuum seal is broken, usually after a fall; this is "
                   "covered by the 2-year warranty unless it was dropped."),
                  ("The lid leaks", "Take out the gasket, wash it, and press it back into the groove.")),
                 dishwasher_safe=False),
    ProductFacts("OD-4002", "2-person tent", "freestanding double-wall tent, 20D ripstop nylon, aluminium poles",
                 "88 x 52 in floor, 42 in peak height, two doors", "4.2 lb packed", ("green", "orange"),
                 ("Pitch it once at home to check all parts before your trip.",
                  "Dry it completely before storing it, or mildew forms.",
                  "Store it loosely in the large mesh bag, not in the stuff sack."),
                 (("A pole section broke", "A splint tube is in the repair kit; replacement sections are free "
                   "within the 2-year warranty."),
                  ("Water comes in at the seams", "Seal the seams with seam sealer every two seasons.")),
                 ),
    ProductFacts("OD-4003", "down sleeping bag", "650-fill responsibly sourced duck down", "rated 20 °F comfort "
                 "limit, fits up to 6 ft 2 in", "2.6 lb", ("navy",),
                 ("Store it uncompressed in the cotton storage sack.",
                  "Wash it rarely, in a front-loader with down wash.",
                  "Tumble dry low with three clean tennis balls until no clumps are left."),
                 (("Down clumps after washing", "It isn't dry yet; keep tumble drying on low for another hour."),
                  ("A few feathers poke out", "Pull them back in from the other side; don't pull them out.")),
                 ),
    ProductFacts("OD-4004", "running pack", "ripstop nylon daypack with a 2 L bladder sleeve", "18 L, fits torsos "
                 "15-19 in", "1.4 lb", ("black", "cobalt"),
                 ("Hand wash with mild soap and hang it to dry.",
                  "Rinse the bladder sleeve after each run.",
                  "Don't machine wash it: it damages the coating."),
                 (("The pack bounces when running", "Tighten the sternum straps and the side compression straps."),
                  ("The zipper sticks", "Rub a little zipper wax or a candle along the teeth.")),
                 ),
    ProductFacts("OD-4005", "hiking poles", "aluminium trekking poles with cork grips and flick locks", "adjustable "
                 "from 100 to 135 cm", "1.1 lb per pair", ("graphite",),
                 ("Dry the sections apart after wet hikes.",
                  "Tighten the flick locks with the adjustment screw when they slip.",
                  "Replace the rubber tips when the carbide shows."),
                 (("A section keeps slipping", "Open the flick lock and tighten its screw a quarter turn."),
                  ("A pole is stuck extended", "Soak the joint in warm water for a minute and twist it apart.")),
                 ),
    ProductFacts("OD-4006", "camping stove", "single-burner canister stove with piezo ignition", "10,000 BTU, boils "
                 "1 L of water in about 3.5 minutes", "3 oz", ("silver",),
                 ("Let it cool completely before packing it.",
                  "Keep the burner head clean of spilled food.",
                  "Use threaded isobutane canisters only."),
                 (("The igniter doesn't spark", "Light it with a match and send the igniter in under warranty."),
                  ("The flame is weak in the cold", "Keep the canister warm in your jacket before cooking.")),
                 ),
    ProductFacts("OD-4007", "headlamp", "rechargeable LED headlamp, IPX6", "400 lumens, red light mode, up to 40 "
                 "hours on low", "2.7 oz", ("black", "yellow"),
                 ("Charge it fully before a trip; the battery indicator turns green when full.",
                  "Wash the headband by hand.",
                  "Lock it (hold the button 5 seconds) so it doesn't turn on in your pack."),
                 (("It won't turn on", "It is probably locked: hold the button for 5 seconds."),
                  ("It dims after a few minutes on high", "It steps down to protect the battery from heat; this is "
                   "normal.")),
                 ),
    ProductFacts("AP-5001", "wool socks", "merino wool, nylon and elastane", "sizes S (women's 5-7) to XL (men's "
                 "12-14)", "2.5 oz per pair", ("charcoal", "oatmeal", "olive"),
                 ("Machine wash inside out on a wool or cold cycle.",
                  "Air dry flat; tumble drying shrinks them.",
                  "No bleach or fabric softener."),
                 (("A hole after a few weeks", "Holes within 90 days are replaced free; send us a photo."),
                  ("They shrank", "They were dried hot; wool shrinks in the dryer.")),
                 ),
    ProductFacts("AP-5002", "rain jacket", "3-layer waterproof breathable shell, 20,000 mm", "sizes XS to XXL, "
                 "packs into its own pocket", "11 oz", ("black", "moss", "red"),
                 ("Wash with technical wash on a warm cycle, zips closed.",
                  "Tumble dry warm for 20 minutes to restore the water repellency.",
                  "Re-proof with a spray-on treatment once a year."),
                 (("Water no longer beads on the fabric", "The finish needs reviving: wash, then tumble dry warm."),
                  ("Feels wet inside after a climb", "That is sweat condensing; open the pit zips.")),
                 ),
    ProductFacts("AP-5003", "fleece pullover", "recycled polyester fleece", "sizes XS to XXL, relaxed fit",
                 "12 oz", ("navy", "heather grey", "forest"),
                 ("Wash cold inside out with like colors.",
                  "Tumble dry low or hang dry.",
                  "Wash it in a laundry bag to trap microfibres."),
                 (("Pilling under the arms", "Normal with wear; remove pills with a fabric shaver."),
                  ("The zipper pull broke", "Send a photo: we mail a replacement pull for free.")),
                 ),
    ProductFacts("AP-5004", "canvas bag", "organic cotton canvas, 12 oz", "16 x 15 in with a 5 in gusset, inner "
                 "pocket", "9 oz", ("natural", "black"),
                 ("Spot clean with a damp cloth.",
                  "Machine wash cold if needed and reshape it while damp.",
                  "Hang dry; it may shrink slightly in the dryer."),
                 (("Creases won't come out", "Iron it inside out on the cotton setting while slightly damp."),
                  ("A strap seam is loose", "Covered by the 1-year warranty: contact us for a replacement.")),
                 ),
    ProductFacts("AP-5005", "leather belt", "full-grain vegetable-tanned leather, brass buckle", "1.4 in wide, waist "
                 "sizes 30 to 44", "6 oz", ("brown", "black"),
                 ("Condition the leather every six months.",
                  "Let it dry naturally if it gets wet; never near a heater.",
                  "Hang it or roll it loosely when not in use."),
                 (("It is too long", "Order your trouser waist size; the belt has five holes an inch apart."),
                  ("The color rubs off on light clothes", "Vegetable-tanned leather can transfer color when new; "
                   "condition it first.")),
                 ),
    ProductFacts("AP-5006", "beanie", "ribbed merino wool", "one size, stretches to fit 21-24 in heads", "3 oz",
                 ("charcoal", "mustard", "navy", "cream"),
                 ("Hand wash cold with wool detergent.",
                  "Dry flat on a towel.",
                  "Fold it rather than hang it, so it keeps its shape."),
                 (("It itches", "Our merino is 18.5 micron and rarely itches; wash it once with hair conditioner."),
                  ("It stretched out", "Wash it and dry it flat; the rib recovers.")),
                 ),
    ProductFacts("GD-6001", "big planter", "glazed ceramic with a drainage hole and saucer", "14 in across, 13 in "
                 "tall", "11 lb", ("white", "terracotta", "charcoal"),
                 ("Bring it indoors before the first frost; wet ceramic can crack when it freezes.",
                  "Keep the drainage hole clear.",
                  "Clean it with warm soapy water between plantings."),
                 (("White crust on the outside", "Salt deposits from fertiliser; scrub with vinegar and water."),
                  ("It cracked over winter", "Frost damage isn't covered; see the care steps.")),
                 ),
    ProductFacts("GD-6002", "pruners", "bypass pruning shears, SK5 carbon steel blades", "cuts branches up to "
                 "3/4 in", "8 oz", ("green",),
                 ("Wipe the blades clean after each use.",
                  "Oil the pivot once a month.",
                  "Sharpen the cutting blade with a fine file along its bevel."),
                 (("The blades crush instead of cut", "Tighten the pivot nut a little and sharpen the blade."),
                  ("The spring fell out", "Hook it back into the notches on both handles.")),
                 ),
    ProductFacts("GD-6003", "raised bed", "untreated cedar with steel corner brackets", "4 x 4 ft, 11 in deep",
                 "35 lb", ("natural cedar",),
                 ("Line the bottom with cardboard instead of plastic.",
                  "Oil the outside once a year with linseed oil to slow greying.",
                  "Fill it with about 14 cubic feet of soil."),
                 (("A board split during assembly", "Pre-drill the holes; contact us for a replacement board."),
                  ("The wood is turning grey", "Untreated cedar greys naturally; oil the outside to slow it.")),
                 ),
    ProductFacts("GD-6004", "solar lights", "solar-powered LED path lights, IP65", "6 lights, 15 in tall, 8 hours "
                 "of light after a sunny day", "2.2 lb for the set", ("black",),
                 ("Put them where they get at least six hours of direct sun.",
                  "Wipe the solar panels every few weeks.",
                  "Replace the AA NiMH batteries every two years."),
                 (("They don't turn on at night", "Pull the tab under the panel and check the switch is on."),
                  ("They only last an hour", "They got too little sun; move them or replace the batteries.")),
                 ),
)  # fmt: skip


def product_facts() -> Iterator[tuple[CatalogProduct, ProductFacts]]:
    by_sku = {product.sku: product for product in PRODUCTS}
    for facts in PRODUCT_FACTS:
        yield by_sku[facts.sku], facts
