-- Change capture on the demo's row collections (seeds/demo/pgmcp.config.json), as
-- `pgmcp expose <table>` would install it: their row changes reach subscribers.
select pgmcp.expose_table(t::regclass)
  from unnest(array['shop.products', 'shop.order_items', 'support.tickets', 'finance.invoices']) as t;
