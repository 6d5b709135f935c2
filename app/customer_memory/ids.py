"""How a customer is named in long-term memory: every read and write of Mem0 for a customer goes through this."""


def memory_customer_id(customer_id: int) -> str:
    """The id a customer has in long-term memory (Mem0's ``user_id``)."""
    return str(customer_id)
