"""The summary's category distribution p(z) that the discriminator learns to predict (paper §3.2).

The paper uses an LDA topic model trained on the review corpus (100 topics for Yelp, 50 for
Rotten Tomatoes); human categories (business type, movie genre) work too when the corpus has them.

    model = train_lda(texts, LDAConfig(n_topics=100)); model.save("runs/topics")
    model = load_topics("runs/topics")
    p = topic_distributions(model, ["the pizza was great ..."], entity_ids=["biz-1"])  # [1, K]
"""

from denoisesum.topics.models import (
    CategoryTopics,
    LDAConfig,
    LDATopics,
    category_topics,
    content_words,
    load_topics,
    topic_distributions,
    train_lda,
)

__all__ = [
    "CategoryTopics",
    "LDAConfig",
    "LDATopics",
    "category_topics",
    "content_words",
    "load_topics",
    "topic_distributions",
    "train_lda",
]
