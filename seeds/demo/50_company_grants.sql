-- Who may see what of the company database (catalog resources list only objects a role holds a
-- privilege on): support works tickets and looks up customers and orders; finance owns invoices
-- and reads orders; engineering reads everything; admin inherits all three.
grant usage on schema shop, support to support;
grant select on shop.customers, shop.orders, shop.order_items to support;
grant select, insert, update on support.tickets, support.ticket_comments to support;
grant usage on schema shop, finance to finance;
grant select on shop.orders, shop.order_items, shop.products to finance;
grant select, insert, update on finance.invoices to finance;
grant select on finance.revenue_by_month to finance;
grant usage on schema shop, support, finance to engineering;
grant select on all tables in schema shop, support, finance to engineering;
